package bcs

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakeV1 answers /v1 calls with answer and records what it was asked.
type fakeV1 struct {
	asked  []string // "METHOD path?query"
	answer func(r *http.Request) (int, string)
}

func (f *fakeV1) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.asked = append(f.asked, r.Method+" "+r.URL.RequestURI())
	status, body := f.answer(r)
	w.WriteHeader(status)
	w.Write([]byte(body))
}

func serve(t *testing.T, h http.Handler, method, path, body string) envelope {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set(ClusterHeader, "BCS-MESOS-10001")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var e envelope
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		t.Fatalf("%s %s: %v: %s", method, path, err, rec.Body)
	}
	return e
}

// A trailing slash reaches the route without it; /v1 is asked the clean path.
func TestTrailingSlashRoutes(t *testing.T) {
	v1 := &fakeV1{answer: func(*http.Request) (int, string) { return http.StatusOK, `{"items":[]}` }}
	h := New(v1, "", 1<<20)
	for _, p := range []string{GatewayPrefix + "/namespaces/a/configmaps/", DriverPrefix + "/namespaces/a/configmaps"} {
		if e := serve(t, h, http.MethodGet, p, ""); e.Code != CodeSuccess {
			t.Fatalf("GET %s: %+v", p, e)
		}
	}
	if len(v1.asked) != 2 || v1.asked[0] != v1.asked[1] || v1.asked[0] != "GET /v1/namespaces/a/configmaps" {
		t.Fatalf("/v1 was asked %q", v1.asked)
	}
}

// A create whose body is not a JSON document is 1405010 and never reaches /v1.
func TestCreateNotJSON(t *testing.T) {
	v1 := &fakeV1{answer: func(*http.Request) (int, string) { return http.StatusCreated, `{}` }}
	h := New(v1, "", 1<<20)
	for _, body := range []string{"{", "[1]", `"x"`} {
		if e := serve(t, h, http.MethodPost, DriverPrefix+"/namespaces/a/applications", body); e.Code != CodeJSONDecode {
			t.Errorf("body %q: %+v", body, e)
		}
	}
	if len(v1.asked) != 0 {
		t.Fatalf("/v1 was asked %q", v1.asked)
	}
}

// enforce: a 409 in-use refusal is retried forced, with a warning naming the users;
// without enforce the refusal names enforce instead of /v1's force.
func TestDeleteConfigEnforce(t *testing.T) {
	v1 := &fakeV1{answer: func(r *http.Request) (int, string) {
		if r.URL.Query().Get("force") == "true" {
			return http.StatusOK, `{}`
		}
		return http.StatusConflict, `{"error":{"message":"configmap a/cfg is used by process a/web, application a/api: change them first, or delete with ?force=true (berth delete --force)"}}`
	}}
	h := New(v1, "", 1<<20)
	path := DriverPrefix + "/namespaces/a/configmaps/cfg"
	e := serve(t, h, http.MethodDelete, path, "")
	if e.Code != CodeScheduler || !strings.Contains(e.Message, "process a/web, application a/api") || !strings.Contains(e.Message, "enforce=1") || strings.Contains(e.Message, "force=true") {
		t.Fatalf("without enforce: %+v", e)
	}
	e = serve(t, h, http.MethodDelete, path+"?enforce=1", "")
	if e.Code != CodeSuccess || len(e.Warnings) != 1 || !strings.Contains(e.Warnings[0], "process a/web, application a/api") {
		t.Fatalf("with enforce: %+v", e)
	}
	if last := v1.asked[len(v1.asked)-1]; last != "DELETE /v1/namespaces/a/configmaps/cfg?force=true" {
		t.Fatalf("the forced delete: %q", v1.asked)
	}
	if e := serve(t, h, http.MethodDelete, path+"?enforce=yes-please", ""); e.Code != CodeDriverParameter {
		t.Fatalf("a bad enforce: %+v", e)
	}
}

// ?validate= goes along to /v1 on the document writes of every kind; a bad value is
// 1405231 and never reaches /v1.
func TestValidateForwarded(t *testing.T) {
	v1 := &fakeV1{answer: func(*http.Request) (int, string) { return http.StatusOK, `{}` }}
	h := New(v1, "", 1<<20)
	doc := `{"kind":"%s","metadata":{"name":"x"},"spec":{"instance":1}}`
	for _, tc := range []struct{ method, route, query, want string }{
		{http.MethodPost, "/namespaces/a/applications", "?validate=strict", "POST /v1/namespaces/a/applications?validate=strict"},
		{http.MethodPut, "/namespaces/a/processes", "?validate=warn", "PUT /v1/namespaces/a/processes/x?validate=warn"},
		{http.MethodPost, "/namespaces/a/deployments", "?validate=strict", "POST /v1/namespaces/a/deployments?validate=strict"},
		{http.MethodPut, "/namespaces/a/services", "?validate=strict", "PUT /v1/namespaces/a/services/x?validate=strict"},
		{http.MethodPost, "/namespaces/a/configmaps", "?validate=strict", "POST /v1/namespaces/a/configmaps?validate=strict"},
		{http.MethodPost, "/namespaces/a/secrets", "?validate=strict", "POST /v1/namespaces/a/secrets?validate=strict"},
		{http.MethodPost, "/namespaces/a/daemonset", "?validate=strict", "POST /v1/namespaces/a/daemonsets?validate=strict"},
		{http.MethodPost, "/namespaces/a/applications", "", "POST /v1/namespaces/a/applications"},
	} {
		v1.asked = nil
		serve(t, h, tc.method, DriverPrefix+tc.route+tc.query, fmt.Sprintf(doc, "x"))
		if len(v1.asked) != 1 || v1.asked[0] != tc.want {
			t.Errorf("%s %s%s: /v1 was asked %q, want %q", tc.method, tc.route, tc.query, v1.asked, tc.want)
		}
	}
	v1.asked = nil
	for _, m := range []string{http.MethodPost, http.MethodPut} {
		e := serve(t, h, m, DriverPrefix+"/namespaces/a/applications?validate=maybe", fmt.Sprintf(doc, "application"))
		if e.Code != CodeDriverParameter || !strings.Contains(e.Message, `validate="maybe"`) {
			t.Errorf("%s with a bad validate: %+v", m, e)
		}
	}
	if len(v1.asked) != 0 {
		t.Fatalf("/v1 was asked %q", v1.asked)
	}
}
