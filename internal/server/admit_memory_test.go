package server

import (
	"net/http"
	"strings"
	"testing"
)

// A container memory limit Docker would refuse at start is refused at admission (422,
// the field and the minimum), on every write path, and nothing is stored; a process is
// not concerned.
func TestDockerMemoryMinimumAtAdmission(t *testing.T) {
	url := newTestServer(t, Config{})
	apps := url + "/v1/namespaces/mem/applications"
	small := strings.Replace(appDoc("mem", "busybox:1"), `"memory":"64"`, `"memory":"5"`, 1)
	const field = "spec.template.spec.containers[0].resources.limits.memory"
	for _, tc := range []struct{ name, method, url, body string }{
		{"create", http.MethodPost, apps, small},
		{"apply", http.MethodPost, url + "/v1/apply", small},
		{"replace", http.MethodPut, apps + "/web", small},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, tc.method, tc.url, tc.body)
			wantStatus(t, r, http.StatusUnprocessableEntity)
			e := decodeError(t, r)
			found := false
			for _, d := range e.Details {
				found = found || strings.HasSuffix(d.Field, field) && strings.Contains(d.Message, "at least 6 MiB (Docker's minimum")
			}
			if !found {
				t.Fatalf("details %+v, want %s: at least 6 MiB (Docker's minimum ...", e.Details, field)
			}
			wantStatus(t, call(t, http.MethodGet, apps+"/web", ""), http.StatusNotFound)
		})
	}
	wantStatus(t, call(t, http.MethodPost, apps, appDoc("mem", "busybox:1")), http.StatusCreated)
	proc := strings.Replace(procJSON("mem", "p", 1), `"startCmd":"./web"`, `"startCmd":"./web","resources":{"limits":{"cpu":"0.1","memory":"2"}}`, 1)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/mem/processes", proc), http.StatusCreated)
}
