package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/berthhq/berth/internal/compat/bcs"
)

// Every write passes one admission chain (admission.go), in one order: the rights of
// every object of the request before anything stored is looked at, then the stored
// state, a controller's ownership first. A create, a replace and an apply of the same
// object get the same answer, through /v1 or through BCS's API.
func TestAdmissionOrder(t *testing.T) {
	url := newTestServer(t, Config{})
	const ns = "adm-order"
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/"+ns+"/processes", controlledProcJSON(ns, "child", 1)), http.StatusCreated)
	tenant := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: order}
rules:
  - {namespaces: [adm-order], kinds: ["*"], verbs: [read, write]}
`, "order", "")
	// child depends on infra's dependency, which the tenant may not read.
	reaching := strings.Replace(procJSON(ns, "child", 1), `"processes":[`,
		`"dependencies":[{"name":"logagent","namespace":"infra"}],"processes":[`, 1)
	// child names a configmap that does not exist.
	dangling := refProcJSON(ns, "child", "nope", "k", "nope", "k")
	procs := "/v1/namespaces/" + ns + "/processes"
	bcsProcs := bcs.DriverPrefix + "/namespaces/" + ns + "/processes"
	for _, c := range []struct {
		name, token, method, path, body string
		want                            int
		says                            string
	}{
		{"apply: rights of every document first", tenant, http.MethodPost, "/v1/apply",
			procJSON(ns, "child", 2) + "\n" + procJSON("elsewhere", "p", 1), http.StatusForbidden, "may not"},
		{"apply: reach before ownership", tenant, http.MethodPost, "/v1/apply", reaching, http.StatusForbidden, "dependencies[0].namespace"},
		{"replace: reach before ownership", tenant, http.MethodPut, procs + "/child", reaching, http.StatusForbidden, "dependencies[0].namespace"},
		{"apply: ownership before references", "", http.MethodPost, "/v1/apply", dangling, http.StatusLocked, "controlled by deployment/web"},
		{"replace: ownership before references", "", http.MethodPut, procs + "/child", dangling, http.StatusLocked, "controlled by deployment/web"},
		{"create: an existing object is a conflict", "", http.MethodPost, procs, procJSON(ns, "child", 2), http.StatusConflict, ""},
		{"delete: ownership", tenant, http.MethodDelete, procs + "/child", "", http.StatusLocked, "controlled by deployment/web"},
		// BCS's API turns into the same /v1 calls, and so into the same chain.
		{"BCS create: reach", tenant, http.MethodPost, bcsProcs, reaching, http.StatusForbidden, "dependencies[0].namespace"},
		{"BCS update: ownership before references", "", http.MethodPut, bcsProcs, dangling, http.StatusLocked, "controlled by deployment/web"},
	} {
		if strings.HasPrefix(c.path, bcs.DriverPrefix) {
			// BCS's envelope says the refusal; its HTTP status is BCS's (docs/compat.md).
			a := bcsCall(t, c.method, url+c.path, c.body, c.token)
			if a.Result || !strings.Contains(a.Message, c.says) {
				t.Errorf("%s: HTTP %d %+v, want a refusal saying %q", c.name, a.status, a, c.says)
			}
			continue
		}
		var r response
		if c.token == "" {
			r = call(t, c.method, url+c.path, c.body)
		} else {
			r = callAs(t, "", c.method, url+c.path, c.body, c.token)
		}
		if r.code != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, r.code, r.body, c.want)
			continue
		}
		if msg := decodeError(t, r).Message; !strings.Contains(msg, c.says) {
			t.Errorf("%s: message %q, want it to say %q", c.name, msg, c.says)
		}
	}
}
