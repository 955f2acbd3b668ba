package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// archiveFlow stores workflow wfr/flow as failed, with nodes, and archives it.
func archiveFlow(t *testing.T, url string) {
	t.Helper()
	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", routeWf), http.StatusOK)
	nodes := map[string]v4.WfNodeStatus{
		"a":  wfNode("a", "flow", v4.WfNodeSteps, v4.WfFailed, "g0", "g1"),
		"g0": wfNode("g0", "flow[0]", v4.WfNodeStepGroup, v4.WfSucceeded, "s1"),
		"s1": wfNode("s1", "flow[0].one", v4.WfNodePod, v4.WfSucceeded),
		"g1": wfNode("g1", "flow[1]", v4.WfNodeStepGroup, v4.WfFailed, "s2"),
		"s2": wfNode("s2", "flow[1].two", v4.WfNodePod, v4.WfFailed),
	}
	setWfStatus(t, v4.WorkflowStatus{UID: "u1", Phase: v4.WfFailed, Nodes: nodes, FinishedAt: time.Now().UTC()})
	errs, err := testStore.ArchiveWorkflows(context.Background(), "wfr",
		[]*v4.ArchivedWorkflow{{ArchivedAt: time.Now().UTC(), Workflow: storedWf(t, "flow")}})
	if err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
}

// The archive's routes list, read, page, resubmit, retry (back into the objects) and
// delete archived workflows.
func TestWorkflowArchiveRoutes(t *testing.T) {
	url := newTestServer(t, Config{})
	archiveFlow(t, url)
	base := url + "/v1/namespaces/wfr/archivedworkflows"
	wantStatus(t, call(t, http.MethodGet, url+"/v1/namespaces/wfr/workflows/flow", ""), http.StatusNotFound)

	r := call(t, http.MethodGet, base, "")
	wantStatus(t, r, http.StatusOK)
	var list v4.ArchivedWorkflowList
	if err := json.Unmarshal(r.body, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Workflow.Status.Phase != v4.WfFailed || list.Items[0].Workflow.Status.Nodes != nil ||
		len(list.Items[0].Workflow.Spec.Templates) != 0 {
		t.Fatalf("list %s", r.body)
	}
	r = call(t, http.MethodGet, base+"/flow", "")
	wantStatus(t, r, http.StatusOK)
	var got v4.ArchivedWorkflow
	if err := json.Unmarshal(r.body, &got); err != nil || len(got.Workflow.Status.Nodes) != 5 || len(got.Workflow.Spec.Templates) != 2 {
		t.Fatalf("get %s: %v", r.body, err)
	}
	if n := pageNodes(t, base+"/flow/nodes?limit=2"); n != 5 {
		t.Errorf("paged %d nodes", n)
	}
	for _, bad := range []string{base + "?limit=0", base + "?limit=1001", base + "/flow?uid=../x", base + "/flow/nodes?continue=a/b"} {
		wantStatus(t, call(t, http.MethodGet, bad, ""), http.StatusBadRequest)
	}
	wantStatus(t, call(t, http.MethodGet, base+"/nope", ""), http.StatusNotFound)
	wantStatus(t, call(t, http.MethodPost, base+"/flow/actions/suspend", ""), http.StatusNotFound)

	r = call(t, http.MethodPost, base+"/flow/actions/resubmit", `{"parameters":["who=z"]}`)
	wantStatus(t, r, http.StatusOK)
	var nw v4.Workflow
	if err := json.Unmarshal(r.body, &nw); err != nil || !strings.HasPrefix(nw.Metadata.Name, "flow-") {
		t.Fatalf("resubmitted %s: %v", r.body, err)
	}
	if got := storedWf(t, nw.Metadata.Name); *got.Spec.Arguments.Parameters[0].Value != "z" {
		t.Errorf("the override: %+v", got.Spec.Arguments)
	}

	// Retry: stored again, out of the archive, running from its failed step.
	wantStatus(t, call(t, http.MethodPost, base+"/flow/actions/retry", ""), http.StatusOK)
	w := storedWf(t, "flow")
	if w.Status.Phase != v4.WfRunning || w.Status.RetryCount != 1 || w.Status.UID != "u1" {
		t.Errorf("after retry: %+v", w.Status)
	}
	if _, ok := w.Status.Nodes["s2"]; ok || w.Status.Nodes["s1"].Phase != v4.WfSucceeded {
		t.Errorf("nodes after retry: %+v", w.Status.Nodes)
	}
	wantStatus(t, call(t, http.MethodGet, base+"/flow", ""), http.StatusNotFound)

	// Archived again, then deleted.
	setWfStatus(t, v4.WorkflowStatus{UID: "u1", Phase: v4.WfFailed, FinishedAt: time.Now().UTC()})
	if errs, err := testStore.ArchiveWorkflows(context.Background(), "wfr",
		[]*v4.ArchivedWorkflow{{ArchivedAt: time.Now().UTC(), Workflow: storedWf(t, "flow")}}); err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
	wantStatus(t, call(t, http.MethodDelete, base+"/flow?uid=u1", ""), http.StatusOK)
	wantStatus(t, call(t, http.MethodDelete, base+"/flow", ""), http.StatusNotFound)
}

// A token of another namespace reads, deletes and retries nothing of the archive.
func TestWorkflowArchiveOtherNamespace(t *testing.T) {
	url := newTestServer(t, Config{})
	archiveFlow(t, url)
	tok := tokenWithPolicy(t, url, teamA, "team-a", "")
	base := url + "/v1/namespaces/wfr/archivedworkflows"
	for _, c := range []struct{ method, url string }{
		{http.MethodGet, base}, {http.MethodGet, base + "/flow"}, {http.MethodGet, base + "/flow/nodes"},
		{http.MethodDelete, base + "/flow"}, {http.MethodPost, base + "/flow/actions/retry"}, {http.MethodPost, base + "/flow/actions/resubmit"},
	} {
		r := callAs(t, "", c.method, c.url, "", tok)
		if r.code != http.StatusForbidden {
			t.Errorf("%s %s: %d, want 403", c.method, c.url, r.code)
		}
	}
	if _, err := testStore.GetArchived(context.Background(), "wfr", "flow", "u1"); err != nil {
		t.Fatalf("the archived workflow: %v", err)
	}
	r := callAs(t, "", http.MethodGet, url+"/v1/namespaces/team-a/archivedworkflows", "", tok)
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), `"items":[]`) {
		t.Errorf("team-a's archive: %s", r.body)
	}
}

// An archived workflow's steps' artifacts read through the workflow's artifact route as a
// stored one's: by name, or by ?uid= once another workflow of that name is stored; a
// token of another namespace reads none, and a uid of no workflow is 404.
func TestArchivedWorkflowArtifacts(t *testing.T) {
	url := newTestServer(t, Config{ArtifactDir: t.TempDir()})
	stepTG(t, "ns", "s1", "n1", nil)
	storeWorkflow(t, "ns", "wf", "u1")
	wantStatus(t, callAs(t, "n1", http.MethodPut, agentArtifactURL(url, "ns", "s1", "artifact", "main-logs"), "trained\n", ""), http.StatusOK)
	o, err := testStore.Get(context.Background(), v4.KindWorkflow, "ns", "wf")
	if err != nil {
		t.Fatal(err)
	}
	if errs, err := testStore.ArchiveWorkflows(context.Background(), "ns",
		[]*v4.ArchivedWorkflow{{ArchivedAt: time.Now().UTC(), Workflow: o.(*v4.Workflow)}}); err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
	logs := url + "/v1/namespaces/ns/workflows/wf/artifacts/n-1/main-logs"
	read := func(u string) {
		t.Helper()
		r := call(t, http.MethodGet, u, "")
		wantStatus(t, r, http.StatusOK)
		if string(r.body) != "trained\n" {
			t.Fatalf("%s: %q", u, r.body)
		}
	}
	read(logs)
	read(logs + "?uid=u1")
	// A new workflow of the same name: the name reads its artifacts, ?uid= the archived one's.
	storeWorkflow(t, "ns", "wf", "u2")
	wantArtMsg(t, call(t, http.MethodGet, logs, ""), http.StatusNotFound, `no stored artifact "main-logs"`)
	read(logs + "?uid=u1")
	wantArtMsg(t, call(t, http.MethodGet, logs+"?uid=u9", ""), http.StatusNotFound, "workflow ns/wf not found, stored or archived")
	wantStatus(t, call(t, http.MethodGet, logs+"?uid=../u1", ""), http.StatusBadRequest)

	other := tokenWithPolicy(t, url, teamA, "team-a", "")
	wantStatus(t, callAs(t, "", http.MethodGet, logs+"?uid=u1", "", other), http.StatusForbidden)
}
