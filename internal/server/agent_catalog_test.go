package server

import (
	"encoding/json"
	"net/http"
	"testing"
)

// Agents list and watch every service and endpoints object; users cannot write
// endpoints, and the agent routes take only a node's certificate.
func TestAgentCatalog(t *testing.T) {
	url := newTestServer(t, Config{})
	svc := func(ns, name string) string {
		return `{"apiVersion":"v4","kind":"service","metadata":{"name":"` + name + `","namespace":"` + ns + `"},
			"spec":{"selector":{"app":"` + name + `"},"ports":[{"name":"http","protocol":"http","servicePort":80}]}}`
	}
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/ns-a/services", svc("ns-a", "web")), http.StatusCreated)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/ns-b/services", svc("ns-b", "api")), http.StatusCreated)

	r := agentCall(t, http.MethodGet, url+"/v1/agent/services", "")
	wantStatus(t, r, http.StatusOK)
	var list struct {
		ResourceVersion string            `json:"resourceVersion"`
		Items           []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 || list.ResourceVersion == "" {
		t.Fatalf("services listed for an agent: %s", r.body)
	}
	wantStatus(t, agentCall(t, http.MethodGet, url+"/v1/agent/endpoints", ""), http.StatusOK)

	w := openWatch(t, url+"/v1/agent/services?watch=true&resourceVersion="+list.ResourceVersion)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/ns-c/services", svc("ns-c", "db")), http.StatusCreated)
	if typ, name := w.next(); typ != "ADDED" || name != "db" {
		t.Fatalf("got %s %s, want ADDED db", typ, name)
	}

	wantStatus(t, call(t, http.MethodGet, url+"/v1/agent/services", ""), http.StatusUnauthorized)
	wantStatus(t, agentCall(t, http.MethodGet, url+"/v1/agent/services?watch=maybe", ""), http.StatusBadRequest)
	wantStatus(t, agentCall(t, http.MethodGet, url+"/v1/agent/endpoints?watch=true&resourceVersion=-1", ""), http.StatusBadRequest)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/ns-a/endpoints",
		`{"apiVersion":"v4","kind":"endpoint","metadata":{"name":"web","namespace":"ns-a"},"eps":[]}`), http.StatusMethodNotAllowed)
}
