package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/store"
)

const routeWf = `{"apiVersion":"v4","kind":"workflow","metadata":{"name":"flow","namespace":"wfr"},"spec":{
 "entrypoint":"main","arguments":{"parameters":[{"name":"who","value":"a"}]},"templates":[
 {"name":"main","steps":[[{"name":"one","template":"t"}],[{"name":"two","template":"t"}]]},
 {"name":"t","process":{"procName":"t","startCmd":"./t {{workflow.parameters.who}}"}}]}}`

// storedWf reads workflow wfr/name.
func storedWf(t *testing.T, name string) *v4.Workflow {
	t.Helper()
	o, err := testStore.Get(context.Background(), v4.KindWorkflow, "wfr", name)
	if err != nil {
		t.Fatal(err)
	}
	return o.(*v4.Workflow)
}

// setWfStatus writes a workflow's status as the controller would.
func setWfStatus(t *testing.T, st v4.WorkflowStatus) {
	t.Helper()
	w := storedWf(t, "flow")
	w.Status = st
	if err := testStore.Update(context.Background(), w, store.Raw{}); err != nil {
		t.Fatal(err)
	}
}

func wfNode(id, name, typ, phase string, children ...string) v4.WfNodeStatus {
	return v4.WfNodeStatus{ID: id, Name: name, Type: typ, Phase: phase, Children: children}
}

// The actions write what the controller acts on; the nodes route pages nodes kept in
// the object and offloaded ones alike; retry resets a failed workflow; resubmit makes a
// new one with parameter overrides.
func TestWorkflowRoutes(t *testing.T) {
	url := newTestServer(t, Config{})
	base := url + "/v1/namespaces/wfr/workflows/flow"
	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", routeWf), http.StatusOK)

	wantStatus(t, call(t, http.MethodPost, base+"/actions/suspend", ""), http.StatusOK)
	if !storedWf(t, "flow").Spec.Suspend {
		t.Error("suspend did not set spec.suspend")
	}
	wantStatus(t, call(t, http.MethodPost, base+"/actions/resume", `{"node":"flow[0].one"}`), http.StatusOK)
	if w := storedWf(t, "flow"); w.Spec.Suspend || w.Metadata.Annotations[controller.WorkflowResumeAnnotation] != "flow[0].one" {
		t.Errorf("resume: suspend %v, annotations %v", w.Spec.Suspend, w.Metadata.Annotations)
	}
	wantStatus(t, call(t, http.MethodPost, base+"/actions/resume", `{"node":"a,b"}`), http.StatusBadRequest)
	wantStatus(t, call(t, http.MethodPost, base+"/actions/explode", ""), http.StatusNotFound)
	wantStatus(t, call(t, http.MethodPost, base+"/actions/retry", ""), http.StatusConflict) // not failed

	// Nodes inline: three pages of two.
	nodes := map[string]v4.WfNodeStatus{}
	for i := range 5 {
		id := fmt.Sprintf("n%d", i)
		nodes[id] = wfNode(id, fmt.Sprintf("flow.x%d", i), v4.WfNodePod, v4.WfSucceeded)
	}
	setWfStatus(t, v4.WorkflowStatus{UID: "u1", Phase: v4.WfRunning, Nodes: nodes})
	if got := pageNodes(t, base+"/nodes?limit=2"); got != 5 {
		t.Errorf("paged %d inline nodes", got)
	}
	wantStatus(t, call(t, http.MethodGet, base+"/nodes?limit=5001", ""), http.StatusBadRequest)
	wantStatus(t, call(t, http.MethodGet, base+"/nodes?continue=../x", ""), http.StatusBadRequest)

	// Offloaded: a failed step, its group and the steps node; retry removes the failed
	// step and reopens the nodes above it, keeping the succeeded one.
	off := []v4.WfNodeStatus{
		wfNode("a", "flow", v4.WfNodeSteps, v4.WfFailed, "g0", "g1"),
		wfNode("g0", "flow[0]", v4.WfNodeStepGroup, v4.WfSucceeded, "s1"),
		wfNode("s1", "flow[0].one", v4.WfNodePod, v4.WfSucceeded),
		wfNode("g1", "flow[1]", v4.WfNodeStepGroup, v4.WfFailed, "s2"),
		wfNode("s2", "flow[1].two", v4.WfNodePod, v4.WfFailed),
	}
	if err := testStore.PutWorkflowNodes(context.Background(), "wfr", "flow", "u1", off); err != nil {
		t.Fatal(err)
	}
	setWfStatus(t, v4.WorkflowStatus{UID: "u1", Phase: v4.WfFailed, NodesOffloaded: true, FinishedAt: time.Now()})
	if got := pageNodes(t, base+"/nodes?limit=2"); got != 5 {
		t.Errorf("paged %d offloaded nodes", got)
	}
	wantStatus(t, call(t, http.MethodPost, base+"/actions/retry", ""), http.StatusOK)
	w := storedWf(t, "flow")
	left, _ := testStore.WorkflowNodes(context.Background(), "wfr", "flow", "u1")
	if w.Status.Phase != v4.WfRunning || w.Status.RetryCount != 1 || !w.Status.FinishedAt.IsZero() {
		t.Errorf("after retry: %+v", w.Status)
	}
	if _, ok := left["s2"]; ok || left["s1"].Phase != v4.WfSucceeded || left["g1"].Phase != v4.WfRunning || len(left["g1"].Children) != 0 {
		t.Errorf("nodes after retry: %+v", left)
	}

	// Resubmit: a new workflow, the override checked against the arguments.
	wantStatus(t, call(t, http.MethodPost, base+"/actions/resubmit", `{"parameters":["nope=1"]}`), http.StatusBadRequest)
	r := call(t, http.MethodPost, base+"/actions/resubmit", `{"parameters":["who=b"]}`)
	wantStatus(t, r, http.StatusOK)
	var nw v4.Workflow
	if err := json.Unmarshal(r.body, &nw); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(nw.Metadata.Name, "flow-") || len(nw.Metadata.Name) != len("flow-")+5 || nw.Status.Phase != "" {
		t.Errorf("resubmitted %q: %+v", nw.Metadata.Name, nw.Status)
	}
	if got := storedWf(t, nw.Metadata.Name); *got.Spec.Arguments.Parameters[0].Value != "b" {
		t.Errorf("the override: %+v", got.Spec.Arguments)
	}

	wantStatus(t, call(t, http.MethodPost, base+"/actions/stop", ""), http.StatusOK)
	if storedWf(t, "flow").Spec.Shutdown != v4.ShutdownStop {
		t.Error("stop did not set spec.shutdown")
	}
	wantStatus(t, call(t, http.MethodPost, base+"/actions/terminate", ""), http.StatusOK)
	if storedWf(t, "flow").Spec.Shutdown != v4.ShutdownTerminate {
		t.Error("terminate did not set spec.shutdown")
	}
}

// pageNodes reads every node through the nodes route and counts them.
func pageNodes(t *testing.T, url string) int {
	t.Helper()
	seen, token := map[string]bool{}, ""
	for range 20 {
		r := call(t, http.MethodGet, url+"&continue="+token, "")
		wantStatus(t, r, http.StatusOK)
		var page struct {
			Items    []v4.WfNodeStatus `json:"items"`
			Continue string            `json:"continue"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatal(err)
		}
		for _, n := range page.Items {
			if seen[n.ID] {
				t.Fatalf("node %s twice", n.ID)
			}
			seen[n.ID] = true
		}
		if page.Continue == "" {
			return len(seen)
		}
		token = page.Continue
	}
	t.Fatal("more than 20 pages")
	return 0
}
