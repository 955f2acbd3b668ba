package server

import (
	"net/http"
	"testing"
)

// A workload may depend on another namespace's dependency only when its writer may read
// dependencies there; its own namespace's are its own. Through create, replace and apply
// alike, the refusal is a 403 naming the field.
func TestDependencyOfAnotherNamespace(t *testing.T) {
	url := newTestServer(t, Config{})
	tenant := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: tenant}
rules:
  - {namespaces: [team-a], kinds: ["*"], verbs: [read, write]}
`, "tenant", "")
	sharer := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: sharer}
rules:
  - {namespaces: [team-a], kinds: ["*"], verbs: [read, write]}
  - {namespaces: [infra], kinds: [dependency], verbs: [read]}
`, "sharer", "")
	proc := func(name, depNS string) string {
		return `{"apiVersion":"v4","kind":"process","metadata":{"name":"` + name + `","namespace":"team-a"},
		"spec":{"instance":1,"template":{"spec":{"dependencies":[{"name":"logagent","namespace":"` + depNS + `"}],
		"processes":[{"procName":"sleep","startCmd":"exec sleep 60"}]}}}}`
	}
	const field = "spec.template.spec.dependencies[0].namespace"
	for _, c := range []struct {
		name, token, method, path, body string
		want                            int
	}{
		{"own namespace", tenant, http.MethodPost, "/v1/namespaces/team-a/processes", proc("own", "team-a"), http.StatusCreated},
		{"another's", tenant, http.MethodPost, "/v1/namespaces/team-a/processes", proc("other", "infra"), http.StatusForbidden},
		{"another's, applied", tenant, http.MethodPost, "/v1/apply", proc("other", "infra"), http.StatusForbidden},
		{"another's, replaced", tenant, http.MethodPut, "/v1/namespaces/team-a/processes/own", proc("own", "infra"), http.StatusForbidden},
		{"one it may read", sharer, http.MethodPost, "/v1/namespaces/team-a/processes", proc("shared", "infra"), http.StatusCreated},
	} {
		r := callAs(t, "", c.method, url+c.path, c.body, c.token)
		if r.code != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, r.code, r.body, c.want)
			continue
		}
		if c.want == http.StatusForbidden {
			if e := decodeError(t, r); len(e.Details) == 0 || e.Details[0].Field != field {
				t.Errorf("%s: %s, want the field %s", c.name, r.body, field)
			}
		}
	}
}
