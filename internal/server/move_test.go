package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// runningTG stores a running task group of process ns/owner, index 0, on node.
func runningTG(t *testing.T, ns, owner, node string) *v4.TaskGroup {
	t.Helper()
	tg := &v4.TaskGroup{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindTaskGroup},
		Metadata: v4.ObjectMeta{Namespace: ns, Name: "0." + owner + "." + ns + ".berth.1"},
		Spec: v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindProcess, Name: owner}, Node: node, Desired: v4.DesiredRunning,
			Resources: v4.NodeResources{CPU: 0.1, MemoryMB: 10}},
		Status: v4.TaskGroupStatus{Phase: v4.StatusRunning}}
	if err := testStore.Create(context.Background(), tg, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	return tg
}

// eventuallyStatus repeats a request until it answers code: the server's scheduler view
// follows the store a moment behind the writes the test makes directly.
func eventuallyStatus(t *testing.T, method, url, body string, code int, contains ...string) response {
	t.Helper()
	var r response
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		// The plan reads the scheduler's snapshot, which follows etcd a moment later: wait
		// for the answer that names what the test set up.
		if r = call(t, method, url, body); r.code == code && (len(contains) == 0 || strings.Contains(string(r.body), contains[0])) {
			return r
		}
	}
	wantStatus(t, r, code)
	return r
}

func TestMoveEndpoint(t *testing.T) {
	base := newTestServer(t, Config{})
	for _, n := range []string{nodeJSON("node-a", ""), nodeJSON("node-b", ""), nodeJSON("node-off", `,"disabled":true`)} {
		wantStatus(t, call(t, http.MethodPost, base+"/v1/nodes", n), http.StatusCreated)
	}
	procs := base + "/v1/namespaces/mv/processes"
	wantStatus(t, call(t, http.MethodPost, procs, procJSON("mv", "web", 1)), http.StatusCreated)
	stateful := strings.Replace(procJSON("mv", "db", 1), `"namespace":"mv"`, `"namespace":"mv","annotations":{"berth.io/stateful":"true"}`, 1)
	wantStatus(t, call(t, http.MethodPost, procs, stateful), http.StatusCreated)
	web := runningTG(t, "mv", "web", "node-a")
	db := runningTG(t, "mv", "db", "node-a")
	tgURL := func(tg *v4.TaskGroup) string {
		return base + "/v1/namespaces/mv/taskgroups/" + tg.Metadata.Name + "/move"
	}
	tests := []struct {
		name     string
		url      string
		body     string
		code     int
		field    string
		contains string
	}{
		{"not JSON", tgURL(web), `{"node":`, http.StatusBadRequest, "node", "move body"},
		{"unknown field", tgURL(web), `{"nodes":"node-b"}`, http.StatusBadRequest, "node", "unknown field"},
		{"unknown task group", base + "/v1/namespaces/mv/taskgroups/0.nope.mv.berth.1/move", `{}`, http.StatusNotFound, "", "not found"},
		{"unknown node", tgURL(web), `{"node":"node-z"}`, http.StatusNotFound, "node", "node node-z not found"},
		{"the node it is on", tgURL(web), `{"node":"node-a"}`, http.StatusUnprocessableEntity, "node", "already"},
		{"a node that cannot take it", tgURL(web), `{"node":"node-off"}`, http.StatusUnprocessableEntity, "node", "node node-off cannot take instance 0: 1 node: 1 node disabled"},
		{"stateful without force", tgURL(db), `{"node":"node-b"}`, http.StatusUnprocessableEntity, "force", "is stateful"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := eventuallyStatus(t, http.MethodPost, tc.url, tc.body, tc.code, tc.contains)
			e := decodeError(t, r)
			if !strings.Contains(e.Message, tc.contains) {
				t.Errorf("message %q, want it to contain %q", e.Message, tc.contains)
			}
			if tc.field != "" && (len(e.Details) == 0 || e.Details[0].Field != tc.field) {
				t.Errorf("details %+v, want field %q", e.Details, tc.field)
			}
		})
	}
	r := eventuallyStatus(t, http.MethodPost, tgURL(web), `{"node":"node-b"}`, http.StatusAccepted)
	var acc v4.Accepted
	if err := json.Unmarshal(r.body, &acc); err != nil {
		t.Fatal(err)
	}
	if acc.Operation == nil || acc.Operation.Type != v4.OpMove || acc.Operation.Kind != v4.KindProcess || acc.Operation.Target != web.Metadata.Name ||
		!strings.HasPrefix(acc.Watch, "/v1/namespaces/mv/taskgroups?") {
		t.Fatalf("answer %s", r.body)
	}
	var moved v4.TaskGroup
	if err := json.Unmarshal(acc.Object, &moved); err != nil || moved.Metadata.Annotations[v4.MoveToAnnotation] != "node-b" {
		t.Fatalf("task group in the answer: %s (%v)", acc.Object, err)
	}
	r = call(t, http.MethodPost, tgURL(web), `{}`)
	wantStatus(t, r, http.StatusLocked)
	if msg := decodeError(t, r).Message; !strings.Contains(msg, "move operation") {
		t.Errorf("423 message %q must name the move in progress", msg)
	}
	// Forced, the stateful one may go (another application: no lock).
	eventuallyStatus(t, http.MethodPost, tgURL(db), `{"force":true}`, http.StatusAccepted)
}

func TestDrainEndpoint(t *testing.T) {
	base := newTestServer(t, Config{})
	wantStatus(t, call(t, http.MethodPost, base+"/v1/nodes", nodeJSON("node-a", "")), http.StatusCreated)
	wantStatus(t, call(t, http.MethodPost, base+"/v1/nodes/node-z/drain", ""), http.StatusNotFound)
	wantStatus(t, call(t, http.MethodPost, base+"/v1/nodes/node-a/drain?force=maybe", ""), http.StatusBadRequest)

	r := call(t, http.MethodPost, base+"/v1/nodes/node-a/drain?force=true", "")
	wantStatus(t, r, http.StatusAccepted)
	var acc v4.Accepted
	if err := json.Unmarshal(r.body, &acc); err != nil {
		t.Fatal(err)
	}
	var n v4.Node
	if err := json.Unmarshal(acc.Object, &n); err != nil {
		t.Fatal(err)
	}
	if !n.Spec.Disabled || n.Metadata.Annotations[v4.DrainAnnotation] != v4.DrainForce || acc.Operation == nil ||
		acc.Operation.Type != v4.OpDrain || acc.Watch != "/v1/nodes?name=node-a&watch=true" {
		t.Fatalf("answer %s", r.body)
	}
	r = call(t, http.MethodPost, base+"/v1/nodes/node-a/drain", "")
	wantStatus(t, r, http.StatusLocked)
	if msg := decodeError(t, r).Message; !strings.Contains(msg, "drain operation") {
		t.Errorf("423 message %q must name the drain in progress", msg)
	}
}
