package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

const (
	widgetCRD = `{"apiVersion":"v4","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},
 "spec":{"group":"example.com","version":"v1","scope":"Namespaced","names":{"plural":"widgets","singular":"widget","kind":"Widget"}}}`
	widgetsPath = "/v1/namespaces/team-a/widgets.example.com"
)

func widget(ns, name, size string) string {
	return `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"` + name + `","namespace":"` + ns + `"},"spec":{"size":` + size + `}}`
}

func docOf(t *testing.T, r response) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatalf("%s: %v", r.body, err)
	}
	return doc
}

func TestCustomResources(t *testing.T) {
	url := newTestServer(t, Config{})
	wantStatus(t, call(t, http.MethodPost, url+widgetsPath, widget("team-a", "w1", "1")), http.StatusNotFound)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/customresourcedefinitions", widgetCRD), http.StatusCreated)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/customresourcedefinitions", widgetCRD), http.StatusConflict)
	r := call(t, http.MethodGet, url+"/v1/customresourcedefinitions", "")
	wantStatus(t, r, http.StatusOK)
	if items := docOf(t, r)["items"].([]any); len(items) != 1 {
		t.Fatalf("definitions %s", r.body)
	}

	r = call(t, http.MethodPost, url+widgetsPath, widget("team-a", "w1", "1"))
	wantStatus(t, r, http.StatusCreated)
	meta := docOf(t, r)["metadata"].(map[string]any)
	if meta["namespace"] != "team-a" || meta["uid"] == "" || meta["resourceVersion"] == "" || meta["creationTimestamp"] == "" {
		t.Fatalf("created %s", r.body)
	}
	wantStatus(t, call(t, http.MethodPut, url+widgetsPath+"/w1", widget("team-a", "w1", "2")), http.StatusOK)
	r = call(t, http.MethodGet, url+widgetsPath+"/w1", "")
	wantStatus(t, r, http.StatusOK)
	if size := docOf(t, r)["spec"].(map[string]any)["size"]; size != 2.0 {
		t.Fatalf("size %v after the update: %s", size, r.body)
	}
	if again := docOf(t, r)["metadata"].(map[string]any); again["uid"] != meta["uid"] {
		t.Fatalf("the update changed the uid: %v", again)
	}
	r = call(t, http.MethodGet, url+"/v1/widgets.example.com", "")
	wantStatus(t, r, http.StatusOK)
	if items := docOf(t, r)["items"].([]any); len(items) != 1 {
		t.Fatalf("every namespace's widgets %s", r.body)
	}

	wantStatus(t, call(t, http.MethodDelete, url+"/v1/customresourcedefinitions/widgets.example.com", ""), http.StatusConflict)
	wantStatus(t, call(t, http.MethodDelete, url+widgetsPath+"/w1", ""), http.StatusOK)
	wantStatus(t, call(t, http.MethodGet, url+widgetsPath+"/w1", ""), http.StatusNotFound)
	wantStatus(t, call(t, http.MethodDelete, url+"/v1/customresourcedefinitions/widgets.example.com", ""), http.StatusOK)
	wantStatus(t, call(t, http.MethodGet, url+widgetsPath, ""), http.StatusNotFound)
}

// Documents past the bounds, of another kind, or with names that are no DNS labels are
// refused with the field named, and nothing is stored.
func TestCustomResourcesRefused(t *testing.T) {
	url := newTestServer(t, Config{})
	wantStatus(t, call(t, http.MethodPost, url+"/v1/customresourcedefinitions", widgetCRD), http.StatusCreated)
	for _, c := range []struct {
		name, method, path, body string
		code                     int
		field                    string
	}{
		{"too big", http.MethodPost, widgetsPath, widget("team-a", "big", `"`+strings.Repeat("x", 70<<10)+`"`), 422, "body"},
		{"too deep", http.MethodPost, widgetsPath, widget("team-a", "deep", strings.Repeat("[", 40)+strings.Repeat("]", 40)), 422, "spec"},
		{"another kind", http.MethodPost, widgetsPath, strings.Replace(widget("team-a", "w", "1"), `"Widget"`, `"Gadget"`, 1), 422, "kind"},
		{"another version", http.MethodPost, widgetsPath, strings.Replace(widget("team-a", "w", "1"), "example.com/v1", "example.com/v2", 1), 422, "apiVersion"},
		{"hostile name", http.MethodPost, widgetsPath, widget("team-a", "../../x", "1"), 422, "metadata.name"},
		{"upper-case name", http.MethodPost, widgetsPath, widget("team-a", "Web", "1"), 422, "metadata.name"},
		{"another namespace", http.MethodPost, widgetsPath, widget("team-b", "w", "1"), 422, "metadata.namespace"},
		{"not JSON", http.MethodPost, widgetsPath, "kind: Widget", 400, ""},
		{"a namespace no object can be in", http.MethodPost, "/v1/namespaces/Bad_NS/widgets.example.com", widget("Bad_NS", "w", "1"), 400, "namespace"},
		{"undefined kind", http.MethodPost, "/v1/namespaces/team-a/gadgets.example.com", widget("team-a", "w", "1"), 404, ""},
		{"cluster scope", http.MethodPost, "/v1/customresourcedefinitions", strings.Replace(widgetCRD, "Namespaced", "Cluster", 1), 422, "spec.scope"},
		{"definition renamed", http.MethodPut, "/v1/customresourcedefinitions/widgets.example.com", strings.Replace(widgetCRD, `"Widget"`, `"Gizmo"`, 1), 422, "spec"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := call(t, c.method, url+c.path, c.body)
			wantStatus(t, r, c.code)
			if c.field != "" {
				if e := decodeError(t, r); len(e.Details) == 0 || !strings.HasPrefix(e.Details[0].Field, c.field) {
					t.Fatalf("details %+v, want the field %s", e.Details, c.field)
				}
			}
		})
	}
	r := call(t, http.MethodGet, url+"/v1/widgets.example.com", "")
	if items := docOf(t, r)["items"].([]any); len(items) != 0 {
		t.Fatalf("refused documents were stored: %s", r.body)
	}
}

// A token limited to one namespace reads and writes its namespace's custom resources,
// and no other namespace's, nor the cluster's definitions.
func TestCustomResourcesNamespaceToken(t *testing.T) {
	url := newTestServer(t, Config{})
	wantStatus(t, call(t, http.MethodPost, url+"/v1/customresourcedefinitions", widgetCRD), http.StatusCreated)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/team-b/widgets.example.com", widget("team-b", "b1", "1")), http.StatusCreated)
	tok := tokenWithPolicy(t, url, teamA, "team-a", "")
	wantStatus(t, callAs(t, "", http.MethodPost, url+widgetsPath, widget("team-a", "a1", "1"), tok), http.StatusCreated)
	wantStatus(t, callAs(t, "", http.MethodGet, url+widgetsPath+"/a1", "", tok), http.StatusOK)
	wantStatus(t, callAs(t, "", http.MethodGet, url+"/v1/customresourcedefinitions", "", tok), http.StatusForbidden)
	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, "/v1/namespaces/team-b/widgets.example.com/b1", ""},
		{http.MethodGet, "/v1/namespaces/team-b/widgets.example.com", ""},
		{http.MethodGet, "/v1/widgets.example.com", ""},
		{http.MethodPost, "/v1/namespaces/team-b/widgets.example.com", widget("team-b", "x", "1")},
		{http.MethodPut, "/v1/namespaces/team-b/widgets.example.com/b1", widget("team-b", "b1", "9")},
		{http.MethodDelete, "/v1/namespaces/team-b/widgets.example.com/b1", ""},
		{http.MethodPost, "/v1/customresourcedefinitions", strings.ReplaceAll(widgetCRD, "widget", "gizmo")},
		{http.MethodDelete, "/v1/customresourcedefinitions/widgets.example.com", ""},
	} {
		wantStatus(t, callAs(t, "", c.method, url+c.path, c.body, tok), http.StatusForbidden)
	}
	r := call(t, http.MethodGet, url+"/v1/namespaces/team-b/widgets.example.com/b1", "")
	if size := docOf(t, r)["spec"].(map[string]any)["size"]; size != 1.0 {
		t.Fatalf("team-b's widget changed: %s", r.body)
	}
}

// A whole list of custom resources is streamed as objects' lists are, and takes its turn
// among them: a namespace may hold thousands of documents of 64 KiB, and every namespace
// more than that, which no server holds at once for each of many clients.
func TestCustomResourceListsTakeTurns(t *testing.T) {
	s, url := newTestServerOf(t, Config{})
	wantStatus(t, call(t, http.MethodPost, url+"/v1/customresourcedefinitions", widgetCRD), http.StatusCreated)
	wantStatus(t, call(t, http.MethodPost, url+widgetsPath, widget("team-a", "w1", "1")), http.StatusCreated)
	r := call(t, http.MethodGet, url+widgetsPath, "")
	wantStatus(t, r, http.StatusOK)
	if doc := docOf(t, r); doc["resourceVersion"] == nil || len(doc["items"].([]any)) != 1 {
		t.Fatalf("list %s", r.body)
	}
	for range cap(s.lists) {
		s.lists <- struct{}{}
	}
	// While other lists hold every turn, a list waits for one: it gives no answer.
	for _, path := range []string{widgetsPath, "/v1/widgets.example.com"} {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := httpClientAs(t, "").Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			t.Fatalf("GET %s answered %d while every turn of whole lists was taken", path, resp.StatusCode)
		}
	}
	for range cap(s.lists) {
		<-s.lists
	}
	wantStatus(t, call(t, http.MethodGet, url+"/v1/widgets.example.com", ""), http.StatusOK)
}
