package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

const writerOfRP = `kind: acl-policy
metadata: {name: rp-writer}
rules:
  - namespaces: ["rp"]
    kinds: ["*"]
    verbs: [read, write]
`

// POST .../replace begins an OpReplace and asks for the first move; a token limited to
// another namespace, or one that only reads, gets 403; a second replace supersedes the
// first; nothing to replace begins nothing.
func TestReplaceEndpoint(t *testing.T) {
	base := newTestServer(t, Config{})
	procs := base + "/v1/namespaces/rp/processes"
	wantStatus(t, call(t, http.MethodPost, procs, procJSON("rp", "web", 1)), http.StatusCreated)
	wantStatus(t, call(t, http.MethodPost, base+"/v1/namespaces/other/processes", procJSON("other", "web", 1)), http.StatusCreated)
	web := runningTG(t, "rp", "web", "node-a") // its template is not the stored one
	runningTG(t, "other", "web", "node-a")
	writer := tokenWithPolicy(t, base, writerOfRP, "rp-writer", "")
	ro := tokenWithPolicy(t, base, readOnly, "readonly", "")

	for _, c := range []struct{ token, url, want string }{
		{writer, base + "/v1/namespaces/other/processes/web/replace", "may not write process in namespace other"},
		{ro, procs + "/web/replace", "may not write process in namespace rp"},
	} {
		r := callAs(t, "", http.MethodPost, c.url, `{"instances": 1}`, c.token)
		wantStatus(t, r, http.StatusForbidden)
		if msg := decodeError(t, r).Message; !strings.Contains(msg, c.want) {
			t.Errorf("%s: %q, want %q", c.url, msg, c.want)
		}
	}
	for _, ns := range []string{"rp", "other"} {
		if op, _ := testStore.Operation(t.Context(), v4.KindProcess, ns, "web"); op != nil {
			t.Fatalf("a refused replace began %+v", op)
		}
	}
	wantStatus(t, call(t, http.MethodPost, procs+"/nope/replace", `{}`), http.StatusNotFound)
	wantStatus(t, call(t, http.MethodPost, base+"/v1/namespaces/rp/configmaps/web/replace", `{}`), http.StatusUnprocessableEntity)

	r := callAs(t, "", http.MethodPost, procs+"/web/replace", `{"instances": 1}`, writer)
	wantStatus(t, r, http.StatusAccepted)
	var acc v4.Accepted
	if err := json.Unmarshal(r.body, &acc); err != nil {
		t.Fatal(err)
	}
	op := acc.Operation
	if op == nil || op.Type != v4.OpReplace || op.Target != web.Metadata.Name || op.Instances == nil || *op.Instances != 1 ||
		!strings.HasPrefix(acc.Watch, "/v1/namespaces/rp/processes?") {
		t.Fatalf("answer %s", r.body)
	}
	tg, err := testStore.Get(t.Context(), v4.KindTaskGroup, "rp", web.Metadata.Name)
	if err != nil || tg.GetMeta().Annotations[v4.MoveToAnnotation] != v4.MoveAnywhereOrHere {
		t.Fatalf("task group %+v (%v): want it asked to move anywhere or here", tg, err)
	}
	// A scale waits for the replace; a new replace (BCS's next update) supersedes it.
	wantStatus(t, call(t, http.MethodPost, procs+"/web/scale", `{"instances": 2}`), http.StatusLocked)
	r = call(t, http.MethodPost, procs+"/web/replace", `{}`)
	wantStatus(t, r, http.StatusAccepted)
	acc = v4.Accepted{}
	if err := json.Unmarshal(r.body, &acc); err != nil || acc.Operation == nil || acc.Operation.Instances != nil {
		t.Fatalf("second replace: %s", r.body)
	}
	// Zero instances: nothing to do, no operation.
	r = call(t, http.MethodPost, base+"/v1/namespaces/other/processes/web/replace", `{"instances": 0}`)
	wantStatus(t, r, http.StatusAccepted)
	acc = v4.Accepted{}
	if err := json.Unmarshal(r.body, &acc); err != nil || acc.Operation != nil {
		t.Fatalf("replace of 0 instances: %s", r.body)
	}
}
