package server

import (
	"net/http"
	"strings"
	"testing"
)

func jobJSON(ns, task, spec string) string {
	return `{"apiVersion":"v4","kind":"job","metadata":{"name":"batch","namespace":"` + ns + `"},` +
		`"spec":{"template":{"spec":{"processes":[` + task + `]}}` + spec + `}}`
}

// A job is admitted as an application is: its template's privileges are rights of their
// own, its namespace is its writer's, and its spec's bounds are refused with the field.
func TestJobAdmission(t *testing.T) {
	url := newTestServer(t, Config{})
	deployer := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: batch}
rules:
  - {namespaces: ["pv"], kinds: ["*"], verbs: [read, write]}
`, "batch", "")
	plain := `{"procName":"work","startCmd":"./work"}`
	root := `{"procName":"work","startCmd":"./work","user":"root"}`

	r := callAs(t, "", http.MethodPost, url+"/v1/apply", jobJSON("pv", root, ""), deployer)
	wantStatus(t, r, http.StatusForbidden)
	if e := decodeError(t, r); len(e.Details) == 0 || e.Details[0].Field != "spec.template.spec.processes[0].user" {
		t.Errorf("root job: %+v", e)
	}
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/apply", jobJSON("other", plain, ""), deployer), http.StatusForbidden)
	r = callAs(t, "", http.MethodPost, url+"/v1/apply", jobJSON("pv", plain, `,"completions":100001,"parallelism":-1`), deployer)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if body := string(r.body); !strings.Contains(body, "spec.completions") || !strings.Contains(body, "spec.parallelism") {
		t.Errorf("bounds: %s", body)
	}
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/apply", jobJSON("pv", plain, `,"completions":3`), deployer), http.StatusOK)
	r = callAs(t, "", http.MethodGet, url+"/v1/namespaces/pv/jobs/batch", "", deployer)
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), `"completions": 3`) && !strings.Contains(string(r.body), `"completions":3`) {
		t.Errorf("stored job: %s", r.body)
	}
}
