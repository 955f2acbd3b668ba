package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

const archPath = "/v1/namespaces/defaultGroup/archivedworkflows"

// archivedEntry is an archived workflow that finished 120m ago and was archived 60m ago.
func archivedEntry(name, uid, phase, msg string, nodes []v4.WfNodeStatus, expires time.Time) v4.ArchivedWorkflow {
	wf := &v4.Workflow{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindWorkflow},
		Metadata: v4.ObjectMeta{Name: name, Namespace: "defaultGroup"},
		Status: v4.WorkflowStatus{UID: uid, Phase: phase, Message: msg, Progress: "2/3",
			StartedAt: testNow.Add(-3 * time.Hour), FinishedAt: testNow.Add(-2 * time.Hour)}}
	if nodes != nil {
		wf.Status.Nodes = map[string]v4.WfNodeStatus{}
		for _, n := range nodes {
			wf.Status.Nodes[n.ID] = n
		}
	}
	return v4.ArchivedWorkflow{ArchivedAt: testNow.Add(-time.Hour), ExpiresAt: expires, Workflow: wf}
}

// serveArchiveList answers the list route in pages of two: each page's token is the
// index of the next entry.
func serveArchiveList(api *fakeAPI, entries []v4.ArchivedWorkflow) {
	api.mu.Lock()
	defer api.mu.Unlock()
	api.routes["GET "+archPath] = func(w httpResponseWriter, r *httpRequest) {
		from := 0
		fmt.Sscan(r.URL.Query().Get("continue"), &from)
		to := min(from+2, len(entries))
		page := v4.ArchivedWorkflowList{Items: entries[from:to]}
		if to < len(entries) {
			page.Continue = fmt.Sprint(to)
		}
		json.NewEncoder(w).Encode(page)
	}
}

// serveArchived answers route with entry.
func serveArchived(t *testing.T, api *fakeAPI, route string, entry v4.ArchivedWorkflow) {
	t.Helper()
	b, err := json.Marshal(entry)
	if err != nil {
		t.Fatal(err)
	}
	api.json(route, 200, string(b))
}

// TestArchiveList: the list reads every page, or stops at --limit, and prints the
// workflows table's columns for archived workflows.
func TestArchiveList(t *testing.T) {
	entries := []v4.ArchivedWorkflow{
		archivedEntry("pipe-a", "u1", v4.WfSucceeded, "", nil, testNow.Add(7*24*time.Hour)),
		archivedEntry("pipe-b", "u2", v4.WfFailed, "child\nfailed", nil, time.Time{}),
		archivedEntry("pipe-c", "u3", v4.WfError, "", nil, testNow.Add(-time.Minute)),
	}
	for _, c := range []struct {
		args      []string
		wantReqs  []string
		want, not []string
	}{
		{[]string{}, []string{"GET " + archPath + "?limit=1000", "GET " + archPath + "?continue=2&limit=1000"},
			[]string{"NAME UID PHASE PROGRESS FINISHED ARCHIVED EXPIRES", "pipe-a u1 Succeeded 2/3 120m ago 60m ago in 7d",
				"pipe-b u2 Failed 2/3 120m ago 60m ago never", "pipe-c u3 Error 2/3 120m ago 60m ago now"}, []string{"MESSAGE"}},
		{[]string{"--limit", "1"}, []string{"GET " + archPath + "?limit=1"}, []string{"pipe-a u1"}, []string{"pipe-b"}},
		{[]string{"-o", "wide"}, nil, []string{"EXPIRES DURATION MESSAGE", "never 60m child failed"}, nil},
		{[]string{"-o", "name"}, nil, []string{"workflow/pipe-a workflow/pipe-b workflow/pipe-c"}, []string{"NAME"}},
	} {
		api, url := newFakeAPI(t)
		serveArchiveList(api, entries)
		r := runCLIOK(t, url, "", append([]string{"workflow", "archive", "list"}, c.args...)...)
		got := strings.Join(strings.Fields(r.stdout), " ")
		wantContains(t, got, c.want...)
		for _, n := range c.not {
			if strings.Contains(got, n) {
				t.Errorf("%v: has %q:\n%s", c.args, n, r.stdout)
			}
		}
		if c.wantReqs != nil && !slices.Equal(api.got(), c.wantReqs) {
			t.Errorf("%v: requests %q, want %q", c.args, api.got(), c.wantReqs)
		}
	}
	api, url := newFakeAPI(t)
	serveArchiveList(api, entries)
	r := runCLIOK(t, url, "", "wf", "archive", "ls", "-o", "json")
	var page v4.ArchivedWorkflowList
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil || len(page.Items) != 3 || page.Items[2].Workflow.Status.UID != "u3" {
		t.Errorf("-o json: %v %+v", err, page)
	}
	if r := runCLI(t, url, "", "workflow", "archive", "list", "--limit", "-1"); r.err == nil || !strings.Contains(r.err.Error(), "--limit") {
		t.Errorf("--limit -1: %v", r.err)
	}
}

// TestArchiveGet: get draws the archived workflow as `berth workflow get` does, from the
// nodes in it; -o json is the archive's entry; --uid picks one.
func TestArchiveGet(t *testing.T) {
	api, url := newFakeAPI(t)
	serveArchived(t, api, "GET "+archPath+"/pipe", archivedEntry("pipe", "u2", v4.WfFailed, "child failed", treeNodes(4), time.Time{}))
	r := runCLIOK(t, url, "", "workflow", "archive", "get", "pipe", "--uid", "u2")
	wantContains(t, r.stdout, "archived 60m ago, uid u2, expires never\n", "pipe  ✖ Failed  5/6  60m\n",
		"message: child failed", "└─ ✖ train(3)")
	if got := api.got(); len(got) != 1 || got[0] != "GET "+archPath+"/pipe?uid=u2" {
		t.Errorf("requests %q", got)
	}
	r = runCLIOK(t, url, "", "workflow", "archive", "get", "pipe", "-o", "json")
	var e v4.ArchivedWorkflow
	if err := json.Unmarshal([]byte(r.stdout), &e); err != nil || !e.ArchivedAt.Equal(testNow.Add(-time.Hour)) || len(e.Workflow.Status.Nodes) != 8 {
		t.Errorf("-o json: %v\n%s", err, r.stdout)
	}
	if r := runCLI(t, url, "", "workflow", "archive", "get", "gone"); r.err == nil || !strings.Contains(r.err.Error(), "archived workflow gone:") {
		t.Errorf("a missing one: %v", r.err)
	}
}

// TestArchiveDeleteAndActions: delete, resubmit and retry call the archive's routes with
// --uid, and say what they did.
func TestArchiveDeleteAndActions(t *testing.T) {
	api, url := newFakeAPI(t)
	serveArchived(t, api, "DELETE "+archPath+"/pipe", archivedEntry("pipe", "u1", v4.WfSucceeded, "", nil, time.Time{}))
	answer := `{"apiVersion":"v4","kind":"workflow","metadata":{"name":"%s","namespace":"defaultGroup"}}`
	api.json("POST "+archPath+"/pipe/actions/resubmit", 200, fmt.Sprintf(answer, "pipe-x2"))
	api.json("POST "+archPath+"/pipe/actions/retry", 200, fmt.Sprintf(answer, "pipe"))
	for _, c := range []struct {
		args                       []string
		wantReq, wantOut, wantBody string
	}{
		{[]string{"delete", "pipe", "--uid", "u1"}, "DELETE " + archPath + "/pipe?uid=u1", "workflow/pipe (uid u1) deleted from the archive\n", ""},
		{[]string{"resubmit", "pipe", "-p", "epochs=5"}, "POST " + archPath + "/pipe/actions/resubmit", "workflow/pipe-x2 created from pipe\n", `{"parameters":["epochs=5"]}`},
		{[]string{"retry", "pipe", "--uid", "u1"}, "POST " + archPath + "/pipe/actions/retry?uid=u1", "workflow/pipe retried\n", ""},
	} {
		api.reset()
		r := runCLIOK(t, url, "", append([]string{"workflow", "archive"}, c.args...)...)
		if r.stdout != c.wantOut {
			t.Errorf("%v: printed %q, want %q", c.args, r.stdout, c.wantOut)
		}
		if got := api.got(); len(got) != 1 || got[0] != c.wantReq {
			t.Errorf("%v: requests %q, want %q", c.args, got, c.wantReq)
		}
		if b := api.body(strings.SplitN(c.wantReq, "?", 2)[0]); b != c.wantBody {
			t.Errorf("%v: sent %q", c.args, b)
		}
	}
	if r := runCLI(t, url, "", "workflow", "archive", "delete", "gone"); r.err == nil || !strings.Contains(r.err.Error(), "not found") {
		t.Errorf("deleting a missing one: %v", r.err)
	}
}

// TestArchiveFallback: a workflow no longer stored (404) is read, logged and retried
// from the archive, said on stderr; one in neither place is the stored route's 404.
func TestArchiveFallback(t *testing.T) {
	api, url := newFakeAPI(t)
	serveArchived(t, api, "GET "+archPath+"/pipe", archivedEntry("pipe", "u1", v4.WfFailed, "", treeNodes(4), time.Time{}))
	api.routes["GET "+wfPath+"/artifacts/p/main-logs"] = func(w httpResponseWriter, _ *httpRequest) { io.WriteString(w, "prepared\n") }
	api.json("POST "+archPath+"/pipe/actions/retry", 200, `{"apiVersion":"v4","kind":"workflow","metadata":{"name":"pipe","namespace":"defaultGroup"}}`)
	const note = "workflow defaultGroup/pipe is archived\n"
	for _, c := range []struct {
		args    []string
		wantOut string
	}{
		{[]string{"workflow", "logs", "pipe", "prepare"}, "prepared\n"},
		{[]string{"workflow", "get", "pipe"}, "└─ ✖ train(3)"},
		{[]string{"workflow", "retry", "pipe"}, "workflow/pipe retried\n"},
	} {
		r := runCLIOK(t, url, "", c.args...)
		wantContains(t, r.stdout, c.wantOut)
		if r.stderr != note {
			t.Errorf("%v: stderr %q, want %q", c.args, r.stderr, note)
		}
	}
	api.reset()
	r := runCLI(t, url, "", "workflow", "logs", "gone")
	if r.err == nil || !strings.Contains(r.err.Error(), "/workflows/gone not found") || r.stderr != "" {
		t.Errorf("in neither place: %v, stderr %q", r.err, r.stderr)
	}
	if got := api.got(); !slices.Equal(got, []string{"GET /v1/namespaces/defaultGroup/workflows/gone", "GET " + archPath + "/gone"}) {
		t.Errorf("requests %q", got)
	}
	// suspend has no archive route: its 404 is the answer.
	api.reset()
	if r := runCLI(t, url, "", "workflow", "suspend", "pipe"); r.err == nil || len(api.got()) != 1 {
		t.Errorf("suspend: %v, requests %q", r.err, api.got())
	}
}

// TestArchiveBadUID: a --uid that is no status.uid is refused, naming the flag, before
// any request.
func TestArchiveBadUID(t *testing.T) {
	api, url := newFakeAPI(t)
	for _, args := range [][]string{
		{"get", "pipe", "--uid", "../../x"},
		{"delete", "pipe", "--uid", "a/b"},
		{"retry", "pipe", "--uid", "a/b"},
		{"resubmit", "pipe", "--uid", "x\x1b[2J"},
		{"get", "pipe", "--uid", strings.Repeat("a", 65)},
	} {
		r := runCLI(t, url, "", append([]string{"workflow", "archive"}, args...)...)
		if r.err == nil || !strings.Contains(r.err.Error(), "--uid") {
			t.Errorf("%q: %v", args, r.err)
		}
	}
	if got := api.got(); len(got) != 0 {
		t.Errorf("requests made: %q", got)
	}
}
