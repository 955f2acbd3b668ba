package server

import (
	"net/http"
	"strings"
	"testing"
)

// A service port named after no port of the workloads its selector matches is refused,
// naming the field and the ports there are; nothing of the request is stored.
func TestServicePortNamesAreChecked(t *testing.T) {
	url := newTestServer(t, Config{})
	proc := `{"apiVersion":"v4","kind":"process","metadata":{"name":"web","namespace":"sp","labels":{"app":"web"}},
		"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"web","startCmd":"./web",
			"ports":[{"name":"http","hostPort":0},{"name":"admin","hostPort":0}]}]}}}}`
	svc := func(name, port, extra string) string {
		return `{"apiVersion":"v4","kind":"service","metadata":{"name":"` + name + `","namespace":"sp"},
			"spec":{"selector":{"app":"web"},"ports":[{"name":"` + port + `","protocol":"http","servicePort":80` + extra + `}]}}`
	}
	// In one apply stream: the process and a service with a typo.
	r := call(t, http.MethodPost, url+"/v1/apply", proc+"\n"+svc("web", "htp", ""))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	for _, want := range []string{"spec.ports[0].name", `no port named \"htp\"`, "process/web", "admin, http"} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("the refusal lacks %q: %s", want, r.body)
		}
	}
	wantStatus(t, call(t, http.MethodGet, url+"/v1/namespaces/sp/processes/web", ""), http.StatusNotFound)

	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", proc+"\n"+svc("web", "http", "")), http.StatusOK)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/sp/services", svc("typo", "htp", "")), http.StatusUnprocessableEntity)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/sp/services", svc("bynumber", "metrics", `,"targetPort":9100`)), http.StatusCreated)
	// A selector that matches no workload yet is taken: the workload may come later.
	later := strings.Replace(svc("later", "grpc", ""), `"app":"web"`, `"app":"later"`, 1)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/sp/services", later), http.StatusCreated)
}
