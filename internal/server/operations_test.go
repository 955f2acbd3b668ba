package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestScaleIsAnOperation(t *testing.T) {
	base := newTestServer(t, Config{})
	procs := base + "/v1/namespaces/ops/processes"
	wantStatus(t, call(t, http.MethodPost, procs, procJSON("ops", "web", 3)), http.StatusCreated)

	r := call(t, http.MethodPost, procs+"/web/scale", `{"instances": 5}`)
	wantStatus(t, r, http.StatusAccepted)
	var acc v4.Accepted
	if err := json.Unmarshal(r.body, &acc); err != nil {
		t.Fatal(err)
	}
	if acc.Operation == nil || acc.Operation.Type != v4.OpScale || acc.Operation.Message != "scale from 3 to 5" {
		t.Fatalf("operation %+v", acc.Operation)
	}
	if acc.Watch != "/v1/namespaces/ops/processes?name=web&watch=true" || r.header.Get("Location") != acc.Watch {
		t.Fatalf("watch %q, Location %q", acc.Watch, r.header.Get("Location"))
	}
	var p v4.Process
	if err := json.Unmarshal(acc.Object, &p); err != nil || p.Spec.Instance != 5 {
		t.Fatalf("object in the answer: %s (%v)", acc.Object, err)
	}
	got := call(t, http.MethodGet, procs+"/web", "")
	if err := json.Unmarshal(got.body, &p); err != nil || p.Spec.Instance != 5 {
		t.Fatalf("stored instance: %s", got.body)
	}

	// A newer scale replaces the one in progress; another operation must wait (423).
	wantStatus(t, call(t, http.MethodPost, procs+"/web/scale", `{"instances": 2}`), http.StatusAccepted)
	ctx := context.Background()
	if err := testStore.EndOperation(ctx, v4.KindProcess, "ops", "web", v4.OpScale); err != nil {
		t.Fatal(err)
	}
	if err := testStore.BeginOperation(ctx, "ops", "web", v4.Operation{Type: v4.OpMove, Kind: v4.KindProcess, Name: "ops/web"}); err != nil {
		t.Fatal(err)
	}
	r = call(t, http.MethodPost, procs+"/web/scale", `{"instances": 4}`)
	wantStatus(t, r, http.StatusLocked)
	if msg := decodeError(t, r).Message; !strings.Contains(msg, "move operation") {
		t.Fatalf("423 message %q must name the operation in the way", msg)
	}
}

func TestScaleRefusals(t *testing.T) {
	base := newTestServer(t, Config{})
	procs := base + "/v1/namespaces/ops/processes"
	wantStatus(t, call(t, http.MethodPost, procs, controlledProcJSON("ops", "child", 2)), http.StatusCreated)
	wantStatus(t, call(t, http.MethodPost, base+"/v1/namespaces/ops/configmaps", cmJSON("ops", "cm", "eA==")), http.StatusCreated)
	for _, tc := range []struct {
		name, url, body string
		code            int
	}{
		{"controlled by a deployment", procs + "/child/scale", `{"instances": 3}`, http.StatusLocked},
		{"missing object", procs + "/nope/scale", `{"instances": 3}`, http.StatusNotFound},
		{"zero instances of a controlled process", procs + "/child/scale", `{"instances": 0}`, http.StatusLocked},
		{"negative instances", procs + "/child/scale", `{"instances": -1}`, http.StatusUnprocessableEntity},
		{"no instances", procs + "/child/scale", `{}`, http.StatusUnprocessableEntity},
		{"unknown field", procs + "/child/scale", `{"instance": 3}`, http.StatusBadRequest},
		{"not scalable", base + "/v1/namespaces/ops/configmaps/cm/scale", `{"instances": 3}`, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantStatus(t, call(t, http.MethodPost, tc.url, tc.body), tc.code)
		})
	}
}

func TestControlledObjectsRefuseDirectWrites(t *testing.T) {
	base := newTestServer(t, Config{})
	procs := base + "/v1/namespaces/ops/processes"
	wantStatus(t, call(t, http.MethodPost, procs, controlledProcJSON("ops", "child", 2)), http.StatusCreated)
	for _, tc := range []struct {
		name, method, url, body string
	}{
		{"replace", http.MethodPut, procs + "/child", procJSON("ops", "child", 5)},
		{"delete", http.MethodDelete, procs + "/child", ""},
		{"apply", http.MethodPost, base + "/v1/apply", procJSON("ops", "child", 5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, tc.method, tc.url, tc.body)
			wantStatus(t, r, http.StatusLocked)
			if msg := decodeError(t, r).Message; !strings.Contains(msg, "controlled by deployment/web") {
				t.Fatalf("message %q must name the owner", msg)
			}
		})
	}
	var p v4.Process
	if err := json.Unmarshal(call(t, http.MethodGet, procs+"/child", "").body, &p); err != nil || p.Spec.Instance != 2 {
		t.Fatalf("the refused writes changed the object: %+v (%v)", p.Spec, err)
	}
}
