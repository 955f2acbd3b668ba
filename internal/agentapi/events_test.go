package agentapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
)

// postAgentEvent calls handleAgentEvent as node with body and returns the status it
// answers (the handler's error's, or the one it wrote).
func postAgentEvent(t *testing.T, a *API, node, body string) (int, string) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/v1/agent/nodes/"+node+"/events", strings.NewReader(body))
	r.SetPathValue("name", node)
	w := httptest.NewRecorder()
	if err := a.handleAgentEvent(w, r); err != nil {
		ae, ok := errors.AsType[*httpapi.Error](err)
		if !ok {
			t.Fatalf("%s: not an HTTP error: %v", body, err)
		}
		return ae.Code, ae.Message
	}
	return w.Code, ""
}

// An agent records events of its node, of a load-balancer group's service and of the task
// groups it runs, the last on their owner; never of another node's task group, nor of one
// that does not exist.
func TestAgentEventKinds(t *testing.T) {
	storetest.Reset(t, testStore)
	createTaskGroup(t, "ns-a", "0.web.ns-a.c1.1", "n1", v4.StatusRunning)
	createTaskGroup(t, "ns-a", "1.web.ns-a.c1.1", "n2", v4.StatusRunning)
	svc := &v4.Service{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindService},
		Metadata: v4.ObjectMeta{Name: "db", Namespace: "ns-a", Labels: map[string]string{v4.GroupLabel: "g1"}}}
	if err := testStore.Create(context.Background(), svc, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	a := &API{store: testStore, log: storetest.QuietLogger(), bodies: httpapi.Bodies{Max: 1 << 16}}
	ev := func(kind, name, message string) string {
		return `{"type":"Warning","reason":"HookFailed","message":"` + message + `","kind":"` + kind + `","namespace":"ns-a","name":"` + name + `"}`
	}
	tests := []struct {
		name, body string
		code       int
		want       string // in the error's message
	}{
		{"task group of the node", ev("taskgroup", "0.web.ns-a.c1.1", "preStop hook of task web: exit status 1"), http.StatusAccepted, ""},
		{"task group of another node", ev("taskgroup", "1.web.ns-a.c1.1", "n2's"), http.StatusForbidden, "not bound to node n1"},
		{"unknown task group", ev("taskgroup", "2.web.ns-a.c1.1", "gone"), http.StatusNotFound, "does not exist"},
		{"bad task group name", ev("taskgroup", "0.web ns", "m"), http.StatusUnprocessableEntity, "name"},
		{"service of a group", ev("service", "db", "port 5432 in use"), http.StatusAccepted, ""},
		{"unknown service", ev("service", "gone", "m"), http.StatusNotFound, "does not exist"},
		{"node", `{"type":"Warning","reason":"LoadBalancerConfigRefused","message":"haproxy -c failed"}`, http.StatusAccepted, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, msg := postAgentEvent(t, a, "n1", tt.body)
			if code != tt.code || !strings.Contains(msg, tt.want) {
				t.Errorf("%d %q, want %d with %q", code, msg, tt.code, tt.want)
			}
		})
	}

	storetest.FlushEvents(t, testStore)
	evs, err := testStore.ListEvents(context.Background(), v4.EventFilter{Namespace: "ns-a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 {
		t.Fatalf("events of ns-a: %+v, want the task group's and the service's", evs)
	}
	var got v4.Event
	for _, e := range evs {
		if e.Reason == "HookFailed" && e.Kind != v4.KindService {
			got = e
		}
	}
	want := v4.Event{Type: v4.EventWarning, Reason: "HookFailed", Kind: v4.KindProcess, Namespace: "ns-a", Name: "web",
		TaskGroup: "0.web.ns-a.c1.1", Node: "n1", Message: "taskgroup ns-a/0.web.ns-a.c1.1 on node n1: preStop hook of task web: exit status 1"}
	got.Time, got.Count, got.FirstTime, got.LastTime = time.Time{}, 0, time.Time{}, time.Time{}
	if got != want {
		t.Errorf("the task group's event:\n got %+v\nwant %+v", got, want)
	}
}

// A task group without an owner (one written by hand) keeps its events itself.
func TestTaskGroupEventWithoutOwner(t *testing.T) {
	tg := storetest.ProcessTaskGroup("ns-a", "0.web.ns-a.c1.1", "n1")
	tg.Spec.Owner = v4.OwnerRef{}
	rec := taskGroupEventRecord(tg, v4.AgentEvent{Type: v4.EventNormal, Reason: "HookRan", Message: "m"})
	if rec.Kind != v4.KindTaskGroup || rec.Name != "0.web.ns-a.c1.1" || rec.Namespace != "ns-a" || rec.TaskGroup != "0.web.ns-a.c1.1" {
		t.Errorf("record %+v", rec)
	}
}
