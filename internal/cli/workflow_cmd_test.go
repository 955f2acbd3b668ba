package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

const wfPath = "/v1/namespaces/defaultGroup/workflows/pipe"

const submitYAML = `apiVersion: v4
kind: workflow
metadata:
  name: pipe
spec:
  entrypoint: main
  arguments:
    parameters:
      - name: epochs
        value: "1"
  templates:
    - name: main
      container:
        image: busybox
        command: echo hi
`

// nodesJSON answers the nodes route in pages of two: each page's token is the index of
// the next node.
func serveNodes(api *fakeAPI, nodes []v4.WfNodeStatus) {
	api.mu.Lock()
	defer api.mu.Unlock()
	api.routes["GET "+wfPath+"/nodes"] = func(w httpResponseWriter, r *httpRequest) {
		from := 0
		fmt.Sscan(r.URL.Query().Get("continue"), &from)
		to := min(from+2, len(nodes))
		page := map[string]any{"items": nodes[from:to]}
		if to < len(nodes) {
			page["continue"] = fmt.Sprint(to)
		}
		json.NewEncoder(w).Encode(page)
	}
}

// serveWorkflow answers GET of the workflow with phases in turn, the last one for ever.
func serveWorkflow(api *fakeAPI, phases ...string) {
	var n atomic.Int32
	api.mu.Lock()
	defer api.mu.Unlock()
	api.routes["GET "+wfPath] = func(w httpResponseWriter, _ *httpRequest) {
		i := min(int(n.Add(1))-1, len(phases)-1)
		fmt.Fprintf(w, `{"apiVersion":"v4","kind":"workflow","metadata":{"name":"pipe","namespace":"defaultGroup"},
			"spec":{"entrypoint":"main"},"status":{"phase":%q,"startedAt":"2026-11-22T11:59:00Z","message":"%s"}}`, phases[i], map[bool]string{true: "child failed"}[phases[i] == "Failed"])
	}
}

// TestSubmitWatch: submit sends the file's workflow with -p applied, then draws its nodes
// (read through every page of the nodes route) as appended lines until it ends; the exit
// status is 0 for Succeeded and 1 for Failed.
func TestSubmitWatch(t *testing.T) {
	file := filepath.Join(t.TempDir(), "wf.yaml")
	if err := os.WriteFile(file, []byte(submitYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		last     string
		wantCode int
	}{{v4.WfSucceeded, 0}, {v4.WfFailed, 1}} {
		api, url := newFakeAPI(t)
		api.json("POST /v1/namespaces/defaultGroup/workflows", 201, `{"apiVersion":"v4","kind":"workflow","metadata":{"name":"pipe","namespace":"defaultGroup"}}`)
		serveWorkflow(api, v4.WfRunning, v4.WfRunning, c.last)
		serveNodes(api, treeNodes(4))
		r := runCLI(t, url, "", "submit", "-f", file, "-p", "epochs=3", "-p", "lr=0.1", "--watch", "--interval", "1ms")
		var exit *ExitError
		switch {
		case c.wantCode == 0 && r.err != nil:
			t.Fatalf("%s: %v", c.last, r.err)
		case c.wantCode != 0 && (!errors.As(r.err, &exit) || exit.Code != c.wantCode):
			t.Fatalf("%s: err %v, want exit %d", c.last, r.err, c.wantCode)
		}
		var sent v4.Workflow
		if err := json.Unmarshal([]byte(api.body("POST /v1/namespaces/defaultGroup/workflows")), &sent); err != nil {
			t.Fatal(err)
		}
		ps := sent.Spec.Arguments.Parameters
		if len(ps) != 2 || *ps[0].Value != "3" || ps[1].Name != "lr" || *ps[1].Value != "0.1" {
			t.Errorf("arguments sent: %+v", ps)
		}
		wantContains(t, r.stdout, "workflow/pipe created\n", "workflow pipe Running", "pipe.train(2) Succeeded",
			"workflow pipe "+c.last, "└─ ✖ train(3)", "pipe.train(3) Failed 60s: exit code 2: [31mout of 2Jmemory")
		if strings.Count(r.stdout, "pipe.prepare Succeeded") != 1 {
			t.Errorf("a node's phase printed more than once:\n%s", r.stdout)
		}
		pages := 0
		for _, g := range api.got() {
			if strings.HasPrefix(g, "GET "+wfPath+"/nodes?continue=") {
				pages++
			}
		}
		if pages == 0 {
			t.Errorf("the nodes' next pages were never read: %v", api.got())
		}
	}
}

func TestSubmitFromTemplate(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/namespaces/defaultGroup/workflowtemplates/train", 200, `{"apiVersion":"v4","kind":"workflowtemplate",
		"metadata":{"name":"train","namespace":"defaultGroup"},"spec":{"entrypoint":"main","templates":[{"name":"main","container":{"image":"x"}}]}}`)
	api.json("POST /v1/namespaces/defaultGroup/workflows", 201, `{"apiVersion":"v4","kind":"workflow","metadata":{"name":"train-abcde","namespace":"defaultGroup"}}`)
	r := runCLIOK(t, url, "", "submit", "--from", "workflowtemplate/train", "-p", "x=1")
	wantContains(t, r.stdout, "workflow/train-abcde created")
	var sent v4.Workflow
	if err := json.Unmarshal([]byte(api.body("POST /v1/namespaces/defaultGroup/workflows")), &sent); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sent.Metadata.Name, "train-") || len(sent.Metadata.Name) != len("train-")+5 || sent.Spec.Entrypoint != "main" || sent.Kind != v4.KindWorkflow {
		t.Errorf("sent %+v", sent)
	}
	for _, bad := range [][]string{{"submit"}, {"submit", "--from", "job/x"}, {"submit", "--from", "workflowtemplate/"}, {"submit", "--from", "workflowtemplate/a", "-p", "novalue"}} {
		if r := runCLI(t, url, "", bad...); r.err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
}

// TestWorkflowActions: each action is a POST to the actions route, with the node of a
// resume and the parameters of a resubmit in the body.
func TestWorkflowActions(t *testing.T) {
	api, url := newFakeAPI(t)
	answer := `{"apiVersion":"v4","kind":"workflow","metadata":{"name":"%s","namespace":"defaultGroup"}}`
	for _, a := range workflowActions {
		api.json("POST "+wfPath+"/actions/"+a.name, 200, fmt.Sprintf(answer, map[bool]string{true: "pipe-x2", false: "pipe"}[a.name == "resubmit"]))
		args := []string{"workflow", a.name, "pipe"}
		switch a.name {
		case "resume":
			args = append(args, "--node", "approve")
		case "resubmit":
			args = append(args, "-p", "epochs=5")
		}
		r := runCLIOK(t, url, "", args...)
		body := api.body("POST " + wfPath + "/actions/" + a.name)
		switch a.name {
		case "resume":
			if body != `{"node":"approve"}` {
				t.Errorf("resume sent %q", body)
			}
		case "resubmit":
			wantContains(t, r.stdout, "workflow/pipe-x2 created from pipe")
			if body != `{"parameters":["epochs=5"]}` {
				t.Errorf("resubmit sent %q", body)
			}
		default:
			wantContains(t, r.stdout, "workflow/pipe "+a.done)
			if body != "" {
				t.Errorf("%s sent %q", a.name, body)
			}
		}
	}
	api.json("POST "+wfPath+"/actions/retry", 409, `{"error":{"code":409,"message":"workflow pipe has not failed"}}`)
	if r := runCLI(t, url, "", "workflow", "retry", "pipe"); r.err == nil || !strings.Contains(r.err.Error(), "has not failed") {
		t.Errorf("a refused retry: %v", r.err)
	}
}

// TestWorkflowLogs: a finished step's log comes from its stored main-logs, a running
// one's from its task group's main task (spec.step.main); -f follows the running one.
func TestWorkflowLogs(t *testing.T) {
	api, url := newFakeAPI(t)
	serveWorkflow(api, v4.WfRunning)
	nodes := treeNodes(0)
	nodes[2].Type, nodes[2].Phase, nodes[2].TaskGroup = v4.WfNodePod, v4.WfRunning, "0.train-tg"
	serveNodes(api, nodes)
	api.routes["GET "+wfPath+"/artifacts/p/main-logs"] = func(w httpResponseWriter, _ *httpRequest) { io.WriteString(w, "prepared\n") }
	api.json("GET /v1/namespaces/defaultGroup/taskgroups/0.train-tg", 200, `{"apiVersion":"v4","kind":"taskgroup",
		"metadata":{"name":"0.train-tg","namespace":"defaultGroup"},"spec":{"step":{"workflow":"pipe","nodeID":"loop","main":"trainer"}}}`)
	api.routes["GET /v1/namespaces/defaultGroup/taskgroups/0.train-tg/logs"] = func(w httpResponseWriter, r *httpRequest) {
		fmt.Fprintf(w, "epoch 1 task=%s follow=%s\n", r.URL.Query().Get("task"), r.URL.Query().Get("follow"))
	}
	r := runCLIOK(t, url, "", "workflow", "logs", "pipe")
	wantContains(t, r.stdout, "==> pipe.prepare <==\nprepared\n", "==> pipe.train <==\nepoch 1 task=trainer follow=\n")
	r = runCLIOK(t, url, "", "workflow", "logs", "pipe", "prepare")
	if r.stdout != "prepared\n" {
		t.Errorf("logs of prepare: %q", r.stdout)
	}
	r = runCLIOK(t, url, "", "workflow", "logs", "pipe", "-f")
	if r.stdout != "epoch 1 task=trainer follow=true\n" {
		t.Errorf("logs -f: %q", r.stdout)
	}
	if r := runCLI(t, url, "", "workflow", "logs", "pipe", "nosuch"); r.err == nil || !strings.Contains(r.err.Error(), `no step "nosuch"`) {
		t.Errorf("an unknown step: %v", r.err)
	}
}

// TestWorkflowGetAndDescribe: -o json holds every node, those read from the nodes route
// too; the table and describe draw the tree with the progress.
func TestWorkflowGetAndDescribe(t *testing.T) {
	api, url := newFakeAPI(t)
	serveWorkflow(api, v4.WfFailed)
	serveNodes(api, treeNodes(4))
	r := runCLIOK(t, url, "", "workflow", "get", "pipe", "-o", "json")
	var got v4.Workflow
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Nodes) != 8 || got.Status.Nodes["t003"].Phase != v4.WfFailed {
		t.Errorf("-o json has %d nodes", len(got.Status.Nodes))
	}
	r = runCLIOK(t, url, "", "workflow", "get", "pipe")
	wantContains(t, r.stdout, "pipe  ✖ Failed  5/6  60s\n", "message: child failed", "└─ ✖ train(3)")
	api.stream("GET /v1/events")
	r = runCLIOK(t, url, "", "describe", "workflow", "pipe")
	wantContains(t, r.stdout, "Progress:         5/6", "Nodes:", "✖ train(3)", "Message:          child failed")
}

// TestJobSuspendAndLogs: suspend and resume write spec.suspend, again after a conflict;
// logs prints each run's task group.
func TestJobSuspendAndLogs(t *testing.T) {
	api, url := newFakeAPI(t)
	job := `{"apiVersion":"v4","kind":"job","metadata":{"name":"train","namespace":"defaultGroup","resourceVersion":"7"},
		"spec":{"suspend":%t,"template":{"spec":{"processes":[{"procName":"work","startCmd":"./work"}]}}},
		"status":{"finished":[{"taskgroup":"0.gone","index":0,"result":"Succeeded","exitCode":0}]}}`
	api.json("GET /v1/namespaces/defaultGroup/jobs/train", 200, fmt.Sprintf(job, false))
	var puts atomic.Int32
	api.routes["PUT /v1/namespaces/defaultGroup/jobs/train"] = func(w httpResponseWriter, _ *httpRequest) {
		if puts.Add(1) == 1 {
			w.WriteHeader(409)
			io.WriteString(w, `{"error":{"code":409,"message":"changed"}}`)
			return
		}
		io.WriteString(w, api.body("PUT /v1/namespaces/defaultGroup/jobs/train"))
	}
	r := runCLIOK(t, url, "", "job", "suspend", "train")
	wantContains(t, r.stdout, "job/train suspended")
	if puts.Load() != 2 || !strings.Contains(api.body("PUT /v1/namespaces/defaultGroup/jobs/train"), `"suspend":true`) {
		t.Errorf("%d writes: %s", puts.Load(), api.body("PUT /v1/namespaces/defaultGroup/jobs/train"))
	}
	api.json("GET /v1/namespaces/defaultGroup/jobs/train", 200, fmt.Sprintf(job, true))
	runCLIOK(t, url, "", "job", "resume", "train")
	if !strings.Contains(api.body("PUT /v1/namespaces/defaultGroup/jobs/train"), `"suspend":false`) && strings.Contains(api.body("PUT /v1/namespaces/defaultGroup/jobs/train"), `"suspend":true`) {
		t.Errorf("resume wrote %s", api.body("PUT /v1/namespaces/defaultGroup/jobs/train"))
	}
	tg := `{"apiVersion":"v4","kind":"taskgroup","metadata":{"name":"%d.train","namespace":"defaultGroup"},"spec":{"index":%d,"owner":{"kind":"job","name":"train"}}}`
	api.json("GET /v1/namespaces/defaultGroup/taskgroups", 200, `{"kind":"List","items":[`+fmt.Sprintf(tg, 1, 1)+","+fmt.Sprintf(tg, 0, 0)+`]}`)
	for i := range 2 {
		api.routes[fmt.Sprintf("GET /v1/namespaces/defaultGroup/taskgroups/%d.train/logs", i)] = func(w httpResponseWriter, _ *httpRequest) {
			fmt.Fprintf(w, "run %d\n", i)
		}
	}
	r = runCLIOK(t, url, "", "job", "logs", "train")
	wantContains(t, r.stdout, "==> 0.train <==\nrun 0\n==> 1.train <==\nrun 1\n")
	wantContains(t, r.stderr, "0.gone (index 0): Succeeded, exit code 0; its task group is gone")
}
