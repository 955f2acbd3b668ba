package bcs

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/berthhq/berth/internal/compat/bcs/bcswire"
)

func serveKube(t *testing.T, h http.Handler, method, path, body string) (int, []byte) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set(ClusterHeader, "BCS-MESOS-10001")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// Each custom resource route of BCS's driver is one /v1 call: definitions by name, and a
// definition's resources on the object routes of plural.group; the body goes on as sent.
func TestCustomResourceRoutes(t *testing.T) {
	var bodies []string
	v1 := &fakeV1{answer: func(r *http.Request) (int, string) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		return http.StatusOK, `{"kind":"List","items":[]}`
	}}
	h := New(v1, "", 1<<20)
	const cr = GatewayPrefix + "/customresources/bkbcs.tencent.com/v1"
	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, GatewayPrefix + "/customresourcedefinitions", ""},
		{http.MethodPost, GatewayPrefix + "/customresourcedefinitions", `{"kind":"CustomResourceDefinition"}`},
		{http.MethodPut, GatewayPrefix + "/customresourcedefinitions/crontabs.bkbcs.tencent.com", `{}`},
		{http.MethodDelete, GatewayPrefix + "/customresourcedefinitions/crontabs.bkbcs.tencent.com", ""},
		{http.MethodGet, cr + "/crontabs", ""},
		{http.MethodPost, cr + "/namespaces/bcs/crontabs", `{"kind":"CronTab"}`},
		{http.MethodGet, cr + "/namespaces/bcs/crontabs/", ""},
		{http.MethodPut, cr + "/namespaces/bcs/crontabs/c1", `{"kind":"CronTab"}`},
		{http.MethodDelete, DriverPrefix + "/customresources/bkbcs.tencent.com/v1/namespaces/bcs/crontabs/c1", ""},
	} {
		if code, body := serveKube(t, h, c.method, c.path, c.body); code != http.StatusOK {
			t.Fatalf("%s %s: %d %s", c.method, c.path, code, body)
		}
	}
	want := []string{
		"GET /v1/customresourcedefinitions",
		"POST /v1/customresourcedefinitions",
		"PUT /v1/customresourcedefinitions/crontabs.bkbcs.tencent.com",
		"DELETE /v1/customresourcedefinitions/crontabs.bkbcs.tencent.com",
		"GET /v1/crontabs.bkbcs.tencent.com",
		"POST /v1/namespaces/bcs/crontabs.bkbcs.tencent.com",
		"GET /v1/namespaces/bcs/crontabs.bkbcs.tencent.com",
		"PUT /v1/namespaces/bcs/crontabs.bkbcs.tencent.com/c1",
		"DELETE /v1/namespaces/bcs/crontabs.bkbcs.tencent.com/c1",
	}
	if strings.Join(v1.asked, "\n") != strings.Join(want, "\n") {
		t.Fatalf("/v1 was asked\n%s\nwant\n%s", strings.Join(v1.asked, "\n"), strings.Join(want, "\n"))
	}
	if bodies[1] != `{"kind":"CustomResourceDefinition"}` || bodies[7] != `{"kind":"CronTab"}` || bodies[3] != "" {
		t.Fatalf("bodies %q", bodies)
	}
}

// Lists answer Kubernetes' list shapes, failures Kubernetes' Status with /v1's message:
// bcs-client reports the message of any answer of kind Status.
func TestCustomResourceAnswers(t *testing.T) {
	status, answer := http.StatusOK, `{"kind":"List","items":[{"apiVersion":"apiextensions.k8s.io/v1beta1","kind":"CustomResourceDefinition","metadata":{"name":"crontabs.bkbcs.tencent.com"},"spec":{"group":"bkbcs.tencent.com","version":"v1","names":{"plural":"crontabs","singular":"crontab","kind":"CronTab"},"scope":"Namespaced"}}]}`
	v1 := &fakeV1{answer: func(*http.Request) (int, string) { return status, answer }}
	h := New(v1, "", 1<<20)
	code, body := serveKube(t, h, http.MethodGet, GatewayPrefix+"/customresourcedefinitions", "")
	var list bcswire.CustomResourceDefinitionList
	if err := bcswire.Decode(body, &list); code != 200 || err != nil || len(list.Items) != 1 || list.Items[0].Spec.Names.Singular != "crontab" {
		t.Fatalf("%d %v %s", code, err, body)
	}
	answer = `{"kind":"List","items":[]}`
	code, body = serveKube(t, h, http.MethodGet, GatewayPrefix+"/customresources/bkbcs.tencent.com/v1/namespaces/bcs/crontabs", "")
	var crs bcswire.CustomResourceList
	if err := bcswire.Decode(body, &crs); code != 200 || err != nil || crs.Items == nil || crs.APIVersion != "bkbcs.tencent.com/v1" {
		t.Fatalf("%d %v %s", code, err, body)
	}
	for _, c := range []struct {
		status int
		body   string
		reason string
	}{
		{http.StatusNotFound, `{"error":{"code":404,"message":"unknown kind \"crontabs.bkbcs.tencent.com\""}}`, "NotFound"},
		{http.StatusConflict, `{"error":{"code":409,"message":"crontabs.bkbcs.tencent.com bcs/c1: already exists"}}`, "AlreadyExists"},
		{http.StatusForbidden, `{"error":{"code":403,"message":"may not write customresource in namespace other"}}`, "Forbidden"},
		{http.StatusUnprocessableEntity, `{"error":{"code":422,"message":"invalid: kind"}}`, "Invalid"},
	} {
		status, answer = c.status, c.body
		code, body = serveKube(t, h, http.MethodPost, GatewayPrefix+"/customresources/bkbcs.tencent.com/v1/namespaces/bcs/crontabs", `{}`)
		var st bcswire.KubeStatus
		if err := bcswire.Decode(body, &st); err != nil || code != c.status || st.Kind != "Status" || st.Reason != c.reason || st.Code != int32(c.status) {
			t.Errorf("%d: %d %v %s", c.status, code, err, body)
		}
		var e struct{ Message string }
		if json.Unmarshal([]byte(c.body), &struct{ Error *struct{ Message *string } }{&struct{ Message *string }{&e.Message}}) == nil && st.Message != e.Message {
			t.Errorf("message %q, want %q", st.Message, e.Message)
		}
	}
}
