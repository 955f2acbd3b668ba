package bcs

import (
	"encoding/json"
	"fmt"
	"io"
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
		if r.URL.Path == "/v1/namespaces/a/configmaps/other" { // a conflict of another kind
			return http.StatusConflict, `{"error":{"message":"configmap a/other is used by x: stale resourceVersion"}}`
		}
		// The message says other users than usedBy: the front door reads usedBy only.
		return http.StatusConflict, `{"error":{"message":"configmap a/cfg is used by someone else: change them first, or delete with ?force=true (berth delete --force)",
			"usedBy":[{"kind":"process","namespace":"a","name":"web"},{"kind":"application","namespace":"a","name":"api"}]}}`
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
	if e := serve(t, h, http.MethodDelete, DriverPrefix+"/namespaces/a/configmaps/other?enforce=1", ""); e.Code != CodeScheduler || !strings.Contains(e.Message, "stale") {
		t.Fatalf("a conflict without usedBy is not forced: %+v", e)
	}
	if last := v1.asked[len(v1.asked)-1]; last != "DELETE /v1/namespaces/a/configmaps/other" {
		t.Fatalf("a conflict without usedBy was forced: %q", v1.asked)
	}
	if e := serve(t, h, http.MethodDelete, path+"?enforce=yes-please", ""); e.Code != CodeDriverParameter {
		t.Fatalf("a bad enforce: %+v", e)
	}
}

// An update (and a rollback) asks /v1 to replace the first ?instances=N instances, every
// one without it, forced as BCS relaunched stateful instances too; instances=0 replaces
// none; a refused replace is a warning; a bad count changes nothing.
func TestUpdateReplacesFirstInstances(t *testing.T) {
	var bodies []string
	refuse := false
	v1 := &fakeV1{answer: func(r *http.Request) (int, string) {
		if r.Method == http.MethodPut {
			return http.StatusOK, `{"kind":"application","metadata":{"name":"web","namespace":"a","resourceVersion":"9"},"spec":{"instance":5}}`
		}
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		if refuse {
			return http.StatusLocked, `{"error":{"message":"application a/web: a scale operation started 1s ago is in progress"}}`
		}
		return http.StatusAccepted, `{}`
	}}
	h := New(v1, "", 1<<20)
	body := `{"apiVersion":"v4","kind":"application","metadata":{"name":"web","namespace":"a"},"spec":{"instance":5}}`
	for _, tc := range []struct{ route, want string }{
		{"/namespaces/a/applications?instances=3", `{"instances":3,"force":true}`},
		{"/namespaces/a/applications", `{"force":true}`},
		{"/namespaces/a/applications/rollback", `{"force":true}`},
		{"/namespaces/a/processes?instances=1", `{"instances":1,"force":true}`},
	} {
		v1.asked, bodies = nil, nil
		e := serve(t, h, http.MethodPut, DriverPrefix+tc.route, body)
		plural := strings.Split(tc.route, "/")[3]
		plural, _, _ = strings.Cut(plural, "?")
		want := []string{"PUT /v1/namespaces/a/" + plural + "/web", "POST /v1/namespaces/a/" + plural + "/web/replace"}
		if e.Code != CodeSuccess || len(e.Warnings) != 0 || strings.Join(v1.asked, ",") != strings.Join(want, ",") || len(bodies) != 1 || bodies[0] != tc.want {
			t.Fatalf("%s: %+v, asked %q with %q", tc.route, e, v1.asked, bodies)
		}
	}
	v1.asked = nil
	if e := serve(t, h, http.MethodPut, DriverPrefix+"/namespaces/a/applications?instances=0", body); e.Code != CodeSuccess || len(v1.asked) != 1 {
		t.Fatalf("instances=0: %+v, asked %q", e, v1.asked)
	}
	refuse = true
	e := serve(t, h, http.MethodPut, DriverPrefix+"/namespaces/a/applications?instances=3", body)
	if e.Code != CodeSuccess || len(e.Warnings) != 1 || !strings.Contains(e.Warnings[0], "the instances were not replaced: application a/web: a scale operation") {
		t.Fatalf("a refused replace: %+v", e)
	}
	for _, bad := range []string{"x", "-1", "100001"} {
		v1.asked = nil
		if e := serve(t, h, http.MethodPut, DriverPrefix+"/namespaces/a/applications?instances="+bad, body); e.Code != CodeDriverParameter || len(v1.asked) != 0 {
			t.Fatalf("instances=%s: %+v, asked %q", bad, e, v1.asked)
		}
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
		if len(v1.asked) == 0 || v1.asked[0] != tc.want { // an update then reads the task groups to replace
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
