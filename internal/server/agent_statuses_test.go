package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// statusesJSON is the body of a request of statuses: each task group of ns in phase.
func statusesJSON(t *testing.T, phase string, names ...string) string {
	t.Helper()
	var req v4.AgentStatuses
	for _, name := range names {
		req.TaskGroups = append(req.TaskGroups, v4.TaskGroupReport{Namespace: "ns", Name: name,
			Status: v4.TaskGroupStatus{Phase: phase, HostIP: "10.0.0.1"}})
	}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Several statuses in one request are each written and answered on their own: the
// node's task group is written; one of another node is answered 403 and not written,
// one gone 404, an invalid status 422 naming the field; the others are written all the
// same.
func TestAgentStatuses(t *testing.T) {
	url := newTestServer(t, Config{})
	putTaskGroup(t, "ns", "0.web.ns.c.1", "n1", nil)
	putTaskGroup(t, "ns", "1.web.ns.c.1", "n1", nil)
	putTaskGroup(t, "ns", "0.theirs.ns.c.1", "n2", nil)
	req := v4.AgentStatuses{TaskGroups: []v4.TaskGroupReport{
		{Namespace: "ns", Name: "0.web.ns.c.1", Status: v4.TaskGroupStatus{Phase: v4.StatusRunning, HostIP: "10.0.0.1"}},
		{Namespace: "ns", Name: "0.theirs.ns.c.1", Status: v4.TaskGroupStatus{Phase: v4.StatusFailed}},
		{Namespace: "ns", Name: "9.gone.ns.c.1", Status: v4.TaskGroupStatus{Phase: v4.StatusRunning}},
		{Namespace: "ns", Name: "1.web.ns.c.1", Status: v4.TaskGroupStatus{Phase: "Sleeping"}},
	}}
	body, _ := json.Marshal(req)
	r := agentCall(t, http.MethodPost, url+"/v1/agent/nodes/n1/statuses", string(body))
	wantStatus(t, r, http.StatusOK)
	var res v4.AgentStatusesResult
	if err := json.Unmarshal(r.body, &res); err != nil {
		t.Fatal(err)
	}
	want := []int{http.StatusOK, http.StatusForbidden, http.StatusNotFound, http.StatusUnprocessableEntity}
	if len(res.Results) != len(want) {
		t.Fatalf("answers: %s", r.body)
	}
	for i, code := range want {
		if res.Results[i].Code != code {
			t.Errorf("answer %d: %+v, want %d", i, res.Results[i], code)
		}
	}
	if msg := res.Results[1].Message; !strings.Contains(msg, "certificate is for node n1") || !strings.Contains(msg, "n2") {
		t.Errorf("another node's task group: %q", msg)
	}
	if msg := res.Results[3].Message; !strings.Contains(msg, "status.phase") {
		t.Errorf("an invalid status: %q, want the field named", msg)
	}
	if tg := getTaskGroup(t, "ns", "0.web.ns.c.1"); tg.Status.Phase != v4.StatusRunning {
		t.Fatalf("the node's status was not written: %+v", tg.Status)
	}
	if tg := getTaskGroup(t, "ns", "0.theirs.ns.c.1"); tg.Status.Phase != "" {
		t.Fatalf("n1 wrote the status of n2's task group: %+v", tg.Status)
	}
	if tg := getTaskGroup(t, "ns", "1.web.ns.c.1"); tg.Status.Phase != "" {
		t.Fatalf("an invalid status was written: %+v", tg.Status)
	}
	// Phase changes are recorded as events, as for one status.
	r = agentCall(t, http.MethodPost, url+"/v1/agent/nodes/n1/statuses", statusesJSON(t, v4.StatusFailed, "0.web.ns.c.1"))
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), `"code":200`) {
		t.Fatalf("a second status: %s", r.body)
	}
	if tg := getTaskGroup(t, "ns", "0.web.ns.c.1"); tg.Status.Phase != v4.StatusFailed || tg.Status.LastPhase != v4.StatusRunning {
		t.Fatalf("after Failed: %+v", tg.Status)
	}
}

// A request of statuses is bounded and names each task group once, or is refused whole
// with the field named, and writes nothing; another node's agent cannot send one for n1.
func TestAgentStatusesRefused(t *testing.T) {
	url := newTestServer(t, Config{MaxBodyBytes: 64 << 10})
	putTaskGroup(t, "ns", "0.web.ns.c.1", "n1", nil)
	many := make([]string, v4.MaxAgentStatuses+1)
	for i := range many {
		many[i] = fmt.Sprintf("%d.web.ns.c.1", i)
	}
	huge := `{"taskGroups":[{"namespace":"ns","name":"0.web.ns.c.1","status":{"phase":"Failed","message":"` +
		strings.Repeat("x", 70<<10) + `"}}]}`
	for _, c := range []struct {
		name, body string
		code       int
		want       string
	}{
		{"too many", statusesJSON(t, v4.StatusFailed, many...), http.StatusBadRequest, "taskGroups: 201 statuses, over the limit of 200"},
		{"twice", statusesJSON(t, v4.StatusFailed, "0.web.ns.c.1", "0.web.ns.c.1"), http.StatusBadRequest, "taskGroups[1]: ns/0.web.ns.c.1 is reported twice"},
		{"no name", `{"taskGroups":[{"namespace":"ns","status":{"phase":"Failed"}}]}`, http.StatusBadRequest, "taskGroups[0]: namespace and name are required"},
		{"unknown field", `{"taskGroups":[],"spec":{}}`, http.StatusBadRequest, "spec"},
		{"duplicate key", `{"taskGroups":[{"namespace":"ns","name":"0.web.ns.c.1","name":"x","status":{}}]}`, http.StatusBadRequest, "duplicate key"},
		{"too large", huge, http.StatusRequestEntityTooLarge, "over the limit"},
	} {
		r := agentCall(t, http.MethodPost, url+"/v1/agent/nodes/n1/statuses", c.body)
		if r.code != c.code || !strings.Contains(decodeError(t, r).Message, c.want) {
			t.Errorf("%s: %d %s, want %d %q", c.name, r.code, r.body, c.code, c.want)
		}
	}
	r := callAs(t, "n2", http.MethodPost, url+"/v1/agent/nodes/n1/statuses", statusesJSON(t, v4.StatusFailed, "0.web.ns.c.1"), "")
	wantStatus(t, r, http.StatusForbidden)
	if tg := getTaskGroup(t, "ns", "0.web.ns.c.1"); tg.Status.Phase != "" {
		t.Fatalf("a refused request wrote a status: %+v", tg.Status)
	}
	r = agentCall(t, http.MethodPost, url+"/v1/agent/nodes/n1/statuses", `{"taskGroups":[]}`)
	wantStatus(t, r, http.StatusOK)
	if strings.TrimSpace(string(r.body)) != `{"results":[]}` {
		t.Fatalf("no statuses: %s", r.body)
	}
}
