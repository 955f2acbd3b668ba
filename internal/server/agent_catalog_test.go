package server

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
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

	r := agentCall(t, http.MethodGet, url+"/v1/agent/catalog", "")
	wantStatus(t, r, http.StatusOK)
	var cat struct {
		Services, Endpoints struct {
			ResourceVersion string            `json:"resourceVersion"`
			Items           []json.RawMessage `json:"items"`
		}
	}
	if err := json.Unmarshal(r.body, &cat); err != nil {
		t.Fatal(err)
	}
	if len(cat.Services.Items) != 2 || cat.Services.ResourceVersion == "" || cat.Endpoints.Items == nil || cat.Endpoints.ResourceVersion == "" {
		t.Fatalf("the catalog listed for an agent: %s", r.body)
	}

	w := openWatch(t, url+"/v1/agent/catalog?watch=true&services="+cat.Services.ResourceVersion+"&endpoints="+cat.Endpoints.ResourceVersion)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/ns-c/services", svc("ns-c", "db")), http.StatusCreated)
	if typ, name := w.next(); typ != "ADDED" || name != "db" {
		t.Fatalf("got %s %s, want ADDED db", typ, name)
	}
	ep := &v4.Endpoints{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindEndpoint}, Metadata: v4.ObjectMeta{Name: "db", Namespace: "ns-c"}}
	if err := testStore.Create(context.Background(), ep, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	if typ, name := w.next(); typ != "ADDED" || name != "db" {
		t.Fatalf("got %s %s, want ADDED db (its endpoints)", typ, name)
	}

	wantStatus(t, call(t, http.MethodGet, url+"/v1/agent/catalog", ""), http.StatusUnauthorized)
	wantStatus(t, agentCall(t, http.MethodGet, url+"/v1/agent/catalog?watch=maybe", ""), http.StatusBadRequest)
	wantStatus(t, agentCall(t, http.MethodGet, url+"/v1/agent/catalog?watch=true&endpoints=-1", ""), http.StatusBadRequest)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/ns-a/endpoints",
		`{"apiVersion":"v4","kind":"endpoint","metadata":{"name":"web","namespace":"ns-a"},"eps":[]}`), http.StatusMethodNotAllowed)
}
