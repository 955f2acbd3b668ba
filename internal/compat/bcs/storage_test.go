package bcs

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

const (
	storageQuery   = StoragePrefix + "/query/mesos/dynamic/clusters/BCS-MESOS-10001/"
	storageInspect = StoragePrefix + "/mesos/dynamic/namespace_resources/clusters/BCS-MESOS-10001/namespaces/"
)

func configmapDoc(ns, name string) string {
	return `{"apiVersion":"v4","kind":"configmap","metadata":{"name":"` + name + `","namespace":"` + ns + `"},"datas":{}}`
}

// storageV1 is a /v1 with namespaces a (configmaps one and two) and b (three), where
// namespace c is forbidden.
func storageV1() *fakeV1 {
	return &fakeV1{answer: func(r *http.Request) (int, string) {
		switch r.URL.Path {
		case "/v1/namespaces":
			return http.StatusOK, `{"items":["a","b","c"]}`
		case "/v1/namespaces/a/configmaps", "/v1/namespaces/a/secrets":
			return http.StatusOK, `{"items":[` + configmapDoc("a", "one") + `,` + configmapDoc("a", "two") + `]}`
		case "/v1/namespaces/b/configmaps":
			return http.StatusOK, `{"items":[` + configmapDoc("b", "three") + `]}`
		case "/v1/namespaces/a/configmaps/one":
			return http.StatusOK, configmapDoc("a", "one")
		}
		if strings.HasPrefix(r.URL.Path, "/v1/namespaces/c/") {
			return http.StatusForbidden, `{"error":{"message":"may not read configmap in namespace c"}}`
		}
		return http.StatusNotFound, `{"error":{"message":"not found"}}`
	}}
}

func storageNames(t *testing.T, e envelope) []string {
	t.Helper()
	if e.Code != CodeSuccess {
		t.Fatalf("want success: %+v", e)
	}
	raw, _ := json.Marshal(e.Data)
	var items []storageItem
	if err := json.Unmarshal(raw, &items); err != nil {
		t.Fatalf("items: %v: %s", err, raw)
	}
	var out []string
	for _, it := range items {
		out = append(out, it.Namespace+"/"+it.ResourceName)
		if it.ResourceType != "configmap" || it.ClusterID != "BCS-MESOS-10001" || it.Data == nil {
			t.Errorf("an item without storage's meta: %+v", it)
		}
	}
	return out
}

// A list without namespaces covers those /v1 lets the caller read, skipping one where
// the type is forbidden; a page stops early, reads no namespace past it, and names the
// next offset.
func TestStorageListPages(t *testing.T) {
	v1 := storageV1()
	h := NewStorage(v1, "")
	if got := storageNames(t, serve(t, h, http.MethodPost, storageQuery+"configmap", `{}`)); !slices.Equal(got, []string{"a/one", "a/two", "b/three"}) {
		t.Fatalf("every configmap: %q", got)
	}
	v1.asked = nil
	e := serve(t, h, http.MethodGet, storageQuery+"configmap?limit=1", "")
	if got := storageNames(t, e); !slices.Equal(got, []string{"a/one"}) || len(e.Warnings) != 1 || !strings.Contains(e.Warnings[0], "offset=1") {
		t.Fatalf("limit=1: %q %q", got, e.Warnings)
	}
	if slices.Contains(v1.asked, "GET /v1/namespaces/b/configmaps?limit=500") {
		t.Fatalf("a namespace past the page was read: %q", v1.asked)
	}
	e = serve(t, h, http.MethodGet, storageQuery+"configmap?limit=1&offset=2", "")
	if got := storageNames(t, e); !slices.Equal(got, []string{"b/three"}) || len(e.Warnings) != 0 {
		t.Fatalf("the last page: %q %q", got, e.Warnings)
	}
	e = serve(t, h, http.MethodPost, storageQuery+"configmap", `{"namespace":"b,a","name":"one,three","field":"data.x"}`)
	if got := storageNames(t, e); !slices.Equal(got, []string{"b/three", "a/one"}) || len(e.Warnings) != 1 || !strings.Contains(e.Warnings[0], "field") {
		t.Fatalf("by namespace and name: %q %q", got, e.Warnings)
	}
	// Asked for by name, a forbidden namespace is refused, not skipped.
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, storageQuery+"configmap", strings.NewReader(`{"namespace":"a,c"}`))
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "may not") {
		t.Fatalf("a forbidden namespace asked for: %d %s", rec.Code, rec.Body)
	}
}

// Lists of secrets ask /v1 for keys only.
func TestStorageSecretListKeysOnly(t *testing.T) {
	v1 := storageV1()
	serve(t, NewStorage(v1, ""), http.MethodPost, storageQuery+"secret", `{"namespace":"a"}`)
	if len(v1.asked) != 1 || !strings.Contains(v1.asked[0], "keysOnly=true") {
		t.Fatalf("/v1 was asked %q", v1.asked)
	}
}

// An absent object is HTTP 200 with a failure saying "resource does not exist", which
// bcs-client's apply reads as absent; a present one is storage's document.
func TestStorageGet(t *testing.T) {
	h := NewStorage(storageV1(), "")
	e := serve(t, h, http.MethodGet, storageInspect+"a/configmap/one", "")
	raw, _ := json.Marshal(e.Data)
	var it storageItem
	if err := json.Unmarshal(raw, &it); err != nil || e.Code != CodeSuccess || it.ResourceName != "one" || it.ID != "BCS-MESOS-10001/a/configmap/one" {
		t.Fatalf("a configmap: %v %+v", err, e)
	}
	for _, typ := range []string{"application", "process", "taskgroup", "deployment", "service", "configmap", "secret"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, storageInspect+"a/"+typ+"/none", nil))
		var e envelope
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || rec.Code != http.StatusOK || e.Code != CodeNotFound || !strings.Contains(e.Message, "resource does not exist") {
			t.Errorf("absent %s: %d %s", typ, rec.Code, rec.Body)
		}
	}
}

// Bad conditions name the field and ask /v1 nothing; a cluster other than the server's
// is refused.
func TestStorageRefusals(t *testing.T) {
	v1 := storageV1()
	h := NewStorage(v1, "BCS-MESOS-10001")
	for body, want := range map[string]int{`{"limit":"501"}`: CodeBadRequestData, `{"offset":"-3"}`: CodeBadRequestData,
		`[1]`: CodeJSONDecode, `{"namespace":1}`: CodeJSONDecode} {
		if e := serve(t, h, http.MethodPost, storageQuery+"configmap", body); e.Code != want {
			t.Errorf("conditions %s: %+v", body, e)
		}
	}
	if e := serve(t, h, http.MethodGet, storageQuery+"endpoint", ""); e.Code != CodeDriverParameter {
		t.Errorf("a type not served: %+v", e)
	}
	if len(v1.asked) != 0 {
		t.Fatalf("/v1 was asked %q", v1.asked)
	}
	if e := serve(t, h, http.MethodGet, StoragePrefix+"/query/mesos/dynamic/clusters/BCS-MESOS-2/configmap", ""); e.Code != CodeHeaderCheck {
		t.Errorf("another cluster: %+v", e)
	}
	big := `{"name":"` + strings.Repeat("x", storageMaxBody) + `"}`
	if e := serve(t, h, http.MethodPost, storageQuery+"configmap", big); e.Code != CodeBadRequestData {
		t.Errorf("conditions over the limit: %+v", e)
	}
	if e := serve(t, h, http.MethodGet, storageQuery+"namespace", ""); e.Code != CodeSuccess {
		t.Errorf("namespaces: %+v", e)
	}
}

// Any conditions and path under the storage prefix get BCS's envelope, never a panic.
func FuzzStorageList(f *testing.F) {
	for _, seed := range []string{`{}`, `{"namespace":"a,,b","limit":"2","offset":"1"}`, `{"limit":"99999999999999999999"}`, `[`, `null`} {
		f.Add([]byte(seed), "/query/mesos/dynamic/clusters/BCS-MESOS-10001/configmap?offset=1")
		f.Add([]byte(seed), "/mesos/dynamic/namespace_resources/clusters/BCS-MESOS-10001/namespaces/a/configmap/one")
	}
	door := NewStorage(storageV1(), "")
	f.Fuzz(func(t *testing.T, body []byte, path string) {
		req, err := http.NewRequest(http.MethodPost, StoragePrefix+path, bytes.NewReader(body))
		if err != nil {
			return
		}
		rec := httptest.NewRecorder()
		door.ServeHTTP(rec, req)
		var e envelope
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
			t.Fatalf("%s: not an envelope (%v): %s", path, err, rec.Body)
		}
		if e.Result != (e.Code == CodeSuccess) {
			t.Fatalf("result %v with code %d", e.Result, e.Code)
		}
	})
}
