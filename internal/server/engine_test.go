package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestMutating(t *testing.T) {
	tests := []struct {
		method, path string
		want         bool
	}{
		{http.MethodGet, "/v1/namespaces/a/processes", false},
		{http.MethodGet, "/v1/namespaces/a/processes?watch=true", false},
		{http.MethodHead, "/healthz", false},
		{http.MethodPost, "/v1/apply", true},
		{http.MethodPost, "/v1/namespaces/a/processes", true},
		{http.MethodPut, "/v1/namespaces/a/processes/web", true},
		{http.MethodDelete, "/v1/namespaces/a/processes/web", true},
		{http.MethodPost, "/v1/namespaces/a/processes/web/scale", true},
		{http.MethodPost, "/v1/namespaces/a/processes/web/replace", true},
		{http.MethodPost, "/v1/namespaces/a/taskgroups/0.web.a.berth.1/move", true},
		{http.MethodPost, "/v1/namespaces/a/taskgroups/0.web.a.berth.1/actions/restart", true},
		{http.MethodPatch, "/v1/nodes/node-a", true},
		{http.MethodPost, "/v1/nodes/node-a/drain", true},
		{http.MethodPut, "/v1/engine", false},
		{http.MethodPut, "/v1/agent/nodes/node-a/heartbeat", false},
		{http.MethodPost, "/v1/agent/register", false},
		{http.MethodPut, "/v1/agent/taskgroups/a/0.web.a.berth.1/status", false},
		{http.MethodPost, "/v1/plan", false},
		{http.MethodPost, "/v1/namespaces/a/taskgroups/0.web.a.berth.1/exec", false},
		// bcs-client lists BCS's storage with a POST of conditions: a read.
		{http.MethodPost, "/bcsapi/v4/storage/query/mesos/dynamic/clusters/BCS-MESOS-1/process", false},
	}
	for _, tc := range tests {
		if got := mutating(httptest.NewRequest(tc.method, tc.path, nil)); got != tc.want {
			t.Errorf("%s %s: mutating = %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
}

func TestEngineMaintenance(t *testing.T) {
	base := newTestServer(t, Config{})
	t.Cleanup(func() { testStore.SetEngine(context.Background(), v4.Engine{}) })
	procs := base + "/v1/namespaces/mt/processes"
	wantStatus(t, call(t, http.MethodPost, procs, procJSON("mt", "web", 1)), http.StatusCreated)

	bad := []struct {
		name, body string
		code       int
		field      string
	}{
		{"not JSON", `{`, http.StatusBadRequest, "maintenance"},
		{"a typo", `{"maintenace": true}`, http.StatusBadRequest, "maintenance"},
		{"no maintenance", `{"reason": "x"}`, http.StatusUnprocessableEntity, "maintenance"},
		{"long reason", `{"maintenance": true, "reason": "` + strings.Repeat("x", v4.MaxEngineReason+1) + `"}`, http.StatusUnprocessableEntity, "reason"},
		{"two lines", `{"maintenance": true, "reason": "a\nb"}`, http.StatusUnprocessableEntity, "reason"},
	}
	for _, tc := range bad {
		r := call(t, http.MethodPut, base+"/v1/engine", tc.body)
		wantStatus(t, r, tc.code)
		if e := decodeError(t, r); len(e.Details) == 0 || e.Details[0].Field != tc.field {
			t.Errorf("%s: details %+v, want field %s", tc.name, e.Details, tc.field)
		}
	}
	var e v4.Engine
	if r := call(t, http.MethodGet, base+"/v1/engine", ""); r.code != http.StatusOK || json.Unmarshal(r.body, &e) != nil || e.Maintenance {
		t.Fatalf("bad requests changed the engine: %s", r.body)
	}

	r := call(t, http.MethodPut, base+"/v1/engine", `{"maintenance": true, "reason": "etcd upgrade"}`)
	wantStatus(t, r, http.StatusOK)
	if json.Unmarshal(r.body, &e) != nil || !e.Maintenance || e.Reason != "etcd upgrade" || e.Since.IsZero() {
		t.Fatalf("engine %s", r.body)
	}
	for _, req := range []struct{ method, url, body string }{
		{http.MethodPost, base + "/v1/apply", procJSON("mt", "other", 1)},
		{http.MethodPost, procs + "/web/scale", `{"instances": 2}`},
		{http.MethodDelete, procs + "/web", ""},
		{http.MethodPatch, base + "/v1/nodes/node-a", `{"spec":{"disabled":true}}`},
	} {
		r := call(t, req.method, req.url, req.body)
		wantStatus(t, r, http.StatusLocked)
		if msg := decodeError(t, r).Message; !strings.Contains(msg, "maintenance mode") || !strings.Contains(msg, "etcd upgrade") || !strings.Contains(msg, "berth maintenance off") {
			t.Errorf("%s %s: message %q must say maintenance, the reason and how to end it", req.method, req.url, msg)
		}
	}
	wantStatus(t, call(t, http.MethodGet, procs+"/web", ""), http.StatusOK)
	wantStatus(t, call(t, http.MethodPut, base+"/v1/engine", `{"maintenance": false}`), http.StatusOK)
	wantStatus(t, call(t, http.MethodPost, procs+"/web/scale", `{"instances": 2}`), http.StatusAccepted)
}
