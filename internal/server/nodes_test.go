package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store/storetest"
)

func nodeJSON(name string, extra string) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"node","metadata":{"name":%q},
		"spec":{"ip":"10.0.0.1","capacity":{"cpu":8,"memoryMB":16384,"diskMB":100000}%s},
		"status":{"phase":"Ready"}}`, name, extra)
}

func decodeNodeBody(t *testing.T, body []byte) v4.Node {
	t.Helper()
	var n v4.Node
	if err := json.Unmarshal(body, &n); err != nil {
		t.Fatalf("decode node %s: %v", body, err)
	}
	return n
}

func TestNodeRegisterGetList(t *testing.T) {
	url := newTestServer(t, Config{})
	for _, name := range []string{"node-b", "node-a.rack-1"} {
		r := call(t, http.MethodPost, url+"/v1/nodes", nodeJSON(name, ""))
		wantStatus(t, r, http.StatusCreated)
		n := decodeNodeBody(t, r.body)
		if n.Spec.Hostname != name || n.Spec.Allocatable.CPU != 8 || len(n.Spec.PortRanges) != 1 ||
			n.Status.Phase != v4.NodeReady || n.Metadata.ResourceVersion == "" || n.Metadata.Namespace != "" {
			t.Fatalf("registered node without defaults: %s", r.body)
		}
	}
	wantStatus(t, call(t, http.MethodPost, url+"/v1/nodes", nodeJSON("node-b", "")), http.StatusConflict)

	r := call(t, http.MethodGet, url+"/v1/nodes", "")
	wantStatus(t, r, http.StatusOK)
	var list struct {
		Items []v4.Node `json:"items"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 || list.Items[0].Metadata.Name != "node-a.rack-1" || list.Items[1].Metadata.Name != "node-b" {
		t.Fatalf("list not sorted by name: %s", r.body)
	}
	r = call(t, http.MethodGet, url+"/v1/nodes/node-b", "")
	wantStatus(t, r, http.StatusOK)
	if n := decodeNodeBody(t, r.body); n.Spec.IP != "10.0.0.1" {
		t.Fatalf("get: %s", r.body)
	}
	r = call(t, http.MethodGet, url+"/v1/nodes/nope", "")
	wantStatus(t, r, http.StatusNotFound)
	if !strings.Contains(decodeError(t, r).Message, "node nope not found") {
		t.Fatalf("404 message: %s", r.body)
	}

	// Watch streams existing nodes, then changes.
	lines := openStream(t, url+"/v1/nodes?watch=true")
	for _, want := range []string{"node-a.rack-1", "node-b"} {
		l := nextLine(t, lines)
		if l.Type != "ADDED" || objectMeta(t, l.Object).Name != want {
			t.Fatalf("watch line %s %s, want ADDED %s", l.Type, l.Object, want)
		}
	}
	wantStatus(t, call(t, http.MethodDelete, url+"/v1/nodes/node-b", ""), http.StatusOK)
	if l := nextLine(t, lines); l.Type != "DELETED" || objectMeta(t, l.Object).Name != "node-b" {
		t.Fatalf("watch line %s %s, want DELETED node-b", l.Type, l.Object)
	}
	wantStatus(t, call(t, http.MethodDelete, url+"/v1/nodes/node-b", ""), http.StatusNotFound)
}

func TestNodeRegisterInvalid(t *testing.T) {
	url := newTestServer(t, Config{})
	tests := []struct {
		name, body string
		code       int
		field      string
	}{
		{"not json", `{"metadata":`, http.StatusBadRequest, ""},
		{"wrong kind", `{"kind":"process","metadata":{"name":"n1"}}`, http.StatusBadRequest, "kind"},
		{"unknown field", `{"kind":"node","metadata":{"name":"n1"},"spec":{"cpus":4}}`, http.StatusUnprocessableEntity, "spec.cpus"},
		{"every problem at once", `{"kind":"node","metadata":{"name":"N_1"},"spec":{"cpus":4,"capacity":{"cpu":"4"}}}`, http.StatusUnprocessableEntity, "metadata.name"},
		{"wrong type", `{"kind":"node","metadata":{"name":"n1"},"spec":{"capacity":{"cpu":"4"}}}`, http.StatusUnprocessableEntity, "spec.capacity.cpu"},
		{"bad name", nodeJSON("Node_1", ""), http.StatusUnprocessableEntity, "metadata.name"},
		{"bad taint", nodeJSON("n1", `,"taints":[{"key":"k","value":"v","effect":"NoExecute"}]`), http.StatusUnprocessableEntity, "spec.taints[0].effect"},
		{"namespace", `{"kind":"node","metadata":{"name":"n1","namespace":"ns-a"}}`, http.StatusUnprocessableEntity, "metadata.namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, http.MethodPost, url+"/v1/nodes", tt.body)
			wantStatus(t, r, tt.code)
			if tt.field == "" {
				return
			}
			for _, d := range decodeError(t, r).Details {
				if d.Field == tt.field {
					return
				}
			}
			t.Fatalf("no detail on %s: %s", tt.field, r.body)
		})
	}
}

func TestNodePatch(t *testing.T) {
	url := newTestServer(t, Config{})
	wantStatus(t, call(t, http.MethodPost, url+"/v1/nodes",
		`{"kind":"node","metadata":{"name":"n1","labels":{"gone":"x","keep":"y"}},"spec":{"capacity":{"cpu":2}}}`), http.StatusCreated)

	patch := `{"metadata":{"labels":{"k":"v","gone":null}},
		"spec":{"attributes":{"text":{"rack":"r1"},"set":{"zone":["a","b"]}},
		"taints":[{"key":"dedicated","value":"db","effect":"NoSchedule"}],"disabled":true}}`
	r := call(t, http.MethodPatch, url+"/v1/nodes/n1", patch)
	wantStatus(t, r, http.StatusOK)
	n := decodeNodeBody(t, r.body)
	if fmt.Sprint(n.Metadata.Labels) != "map[k:v keep:y]" || n.Spec.Attributes.Text["rack"] != "r1" ||
		len(n.Spec.Attributes.Set["zone"]) != 2 || len(n.Spec.Taints) != 1 || !n.Spec.Disabled || n.Spec.Capacity.CPU != 2 {
		t.Fatalf("patched node: %s", r.body)
	}
	stale := n.Metadata.ResourceVersion

	// Re-enable and drop the taints (a merge patch replaces arrays).
	r = call(t, http.MethodPatch, url+"/v1/nodes/n1", `{"spec":{"disabled":false,"taints":null}}`)
	wantStatus(t, r, http.StatusOK)
	if n := decodeNodeBody(t, r.body); n.Spec.Disabled || len(n.Spec.Taints) != 0 || n.Spec.Attributes.Text["rack"] != "r1" {
		t.Fatalf("second patch: %s", r.body)
	}

	// A resourceVersion in the patch is a precondition, not retried.
	wantStatus(t, call(t, http.MethodPatch, url+"/v1/nodes/n1",
		`{"metadata":{"resourceVersion":"`+stale+`"},"spec":{"disabled":true}}`), http.StatusConflict)

	r = call(t, http.MethodPatch, url+"/v1/nodes/n1", `{"spec":{"taints":[{"key":"k","effect":"NoSchedule"}]}}`)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if d := decodeError(t, r).Details; len(d) != 1 || d[0].Field != "spec.taints[0].value" {
		t.Fatalf("422 details: %s", r.body)
	}
	wantStatus(t, call(t, http.MethodPatch, url+"/v1/nodes/n1", `{"spec":{"bogus":1}}`), http.StatusUnprocessableEntity)
	wantStatus(t, call(t, http.MethodPatch, url+"/v1/nodes/n1", `{"metadata":{"name":"n2"}}`), http.StatusBadRequest)
	wantStatus(t, call(t, http.MethodPatch, url+"/v1/nodes/n1", `[1]`), http.StatusBadRequest)
	wantStatus(t, call(t, http.MethodPatch, url+"/v1/nodes/nope", `{}`), http.StatusNotFound)

	// PUT replaces, with the resourceVersion as precondition.
	wantStatus(t, call(t, http.MethodPut, url+"/v1/nodes/n1",
		`{"kind":"node","metadata":{"name":"n1","resourceVersion":"`+stale+`"}}`), http.StatusConflict)
	wantStatus(t, call(t, http.MethodPut, url+"/v1/nodes/n1", `{"kind":"node","metadata":{"name":"n2"}}`), http.StatusBadRequest)
	r = call(t, http.MethodPut, url+"/v1/nodes/n1", `{"kind":"node","metadata":{"name":"n1"},"spec":{"capacity":{"cpu":16}}}`)
	wantStatus(t, r, http.StatusOK)
	if n := decodeNodeBody(t, r.body); n.Spec.Allocatable.CPU != 16 || len(n.Metadata.Labels) != 0 {
		t.Fatalf("put: %s", r.body)
	}

	// Every change is an event of kind node.
	storetest.FlushEvents(t, testStore)
	r = call(t, http.MethodGet, url+"/v1/events?kind=node&name=n1", "")
	wantStatus(t, r, http.StatusOK)
	var events v4.EventList
	if err := json.Unmarshal(r.body, &events); err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, e := range events.Items {
		msgs = append(msgs, fmt.Sprintf("%s x%d", e.Message, e.Occurrences()))
	}
	// The two patches are one record with a count of 2 (docs/api.md, "Events").
	if got, want := strings.Join(msgs, "; "), "node n1 registered x1; node n1 patched x2; node n1 updated x1"; got != want {
		t.Fatalf("events: %s, want %s", got, want)
	}
}

// Nodes are not under namespaces; task groups are, read-only.
func TestSystemKindsOnGenericRoutes(t *testing.T) {
	url := newTestServer(t, Config{})
	wantStatus(t, call(t, http.MethodGet, url+"/v1/namespaces/defaultGroup/nodes", ""), http.StatusNotFound)
	wantStatus(t, call(t, http.MethodGet, url+"/v1/namespaces/defaultGroup/nodes/n1", ""), http.StatusNotFound)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/defaultGroup/nodes", nodeJSON("n1", "")), http.StatusNotFound)

	tg := `{"apiVersion":"v4","kind":"taskgroup","metadata":{"name":"0.web.ns-a.berth.1","namespace":"ns-a"},
		"spec":{"owner":{"kind":"process","name":"web"},"index":0,"node":"n1"}}`
	r := call(t, http.MethodPost, url+"/v1/namespaces/ns-a/taskgroups", tg)
	wantStatus(t, r, http.StatusMethodNotAllowed)
	if r.header.Get("Allow") != "GET" || !strings.Contains(decodeError(t, r).Message, "written by berth itself") {
		t.Fatalf("405 answer: %v %s", r.header, r.body)
	}
	wantStatus(t, call(t, http.MethodPut, url+"/v1/namespaces/ns-a/taskgroups/0.web.ns-a.berth.1", tg), http.StatusMethodNotAllowed)
	wantStatus(t, call(t, http.MethodDelete, url+"/v1/namespaces/ns-a/taskgroups/0.web.ns-a.berth.1", ""), http.StatusMethodNotAllowed)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", tg), http.StatusUnprocessableEntity)

	createTaskGroup(t, "ns-a", "web", 0, "n1", v4.StatusRunning)
	r = call(t, http.MethodGet, url+"/v1/namespaces/ns-a/taskgroups", "")
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), `"0.web.ns-a.berth.1700000000000000000"`) {
		t.Fatalf("task group list: %s", r.body)
	}
	wantStatus(t, call(t, http.MethodGet, url+"/v1/namespaces/ns-a/taskgroups/0.web.ns-a.berth.1700000000000000000", ""), http.StatusOK)
	wantStatus(t, call(t, http.MethodGet, url+"/v1/taskgroups", ""), http.StatusOK)
	lines := openStream(t, url+"/v1/namespaces/ns-a/taskgroups?watch=true")
	if l := nextLine(t, lines); l.Type != "ADDED" {
		t.Fatalf("task group watch: %s", l.Type)
	}
}
