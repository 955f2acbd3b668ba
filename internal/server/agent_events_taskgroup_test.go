package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/berthhq/berth/internal/store/storetest"
)

const tgEventsReader = `kind: acl-policy
metadata: {name: tgev-reader}
rules:
  - namespaces: [tgev]
    kinds: ["*"]
    verbs: [read]
`

// An agent records an event of a task group it runs (a hook that failed) on the task
// group's owner: a token of the namespace reads it among the process's events, as `berth
// describe process` lists them, and among the namespace's. Such a token cannot post one:
// the route is the agents'.
func TestAgentEventsOfTaskGroups(t *testing.T) {
	url := newTestServer(t, Config{})
	putTaskGroup(t, "tgev", "0.web.tgev.c.1", "n1", nil)
	putTaskGroup(t, "tgev", "1.web.tgev.c.1", "n2", nil)
	ev := func(name string) string {
		return `{"type":"Warning","reason":"HookFailed","message":"preStop hook of task web: exit status 1","kind":"taskgroup","namespace":"tgev","name":"` + name + `"}`
	}
	post := func(name, token string) response {
		node := "n1"
		if token != "" {
			node = ""
		}
		return callAs(t, node, http.MethodPost, url+"/v1/agent/nodes/n1/events", ev(name), token)
	}
	wantStatus(t, post("0.web.tgev.c.1", ""), http.StatusAccepted)
	wantStatus(t, post("1.web.tgev.c.1", ""), http.StatusForbidden)
	wantStatus(t, post("2.web.tgev.c.1", ""), http.StatusNotFound)
	tok := tokenWithPolicy(t, url, tgEventsReader, "tgev-reader", "")
	if r := post("0.web.tgev.c.1", tok); r.code != http.StatusUnauthorized {
		t.Errorf("a user's token posted an agent event: %d %s", r.code, r.body)
	}

	storetest.FlushEvents(t, testStore)
	for _, q := range []string{"namespace=tgev&kind=process&name=web", "namespace=tgev"} {
		r := callAs(t, "", http.MethodGet, url+"/v1/events?"+q, "", tok)
		wantStatus(t, r, http.StatusOK)
		body := string(r.body)
		if strings.Count(body, "HookFailed") != 1 || !strings.Contains(body, "taskgroup tgev/0.web.tgev.c.1 on node n1: preStop hook") ||
			!strings.Contains(body, `"taskgroup":"0.web.tgev.c.1"`) {
			t.Errorf("events %s: %s", q, body)
		}
	}
}
