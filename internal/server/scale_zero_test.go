package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/bcs"
	"github.com/berthhq/berth/internal/store/storetest"
)

// Every kind with instances scales to 0 and back through /v1 (the scale route and an
// applied spec.instance of 0); the object stays, the operation and the Scaled event say
// from what to what.
func TestScaleToZero(t *testing.T) {
	url := newTestServer(t, Config{})
	v1 := url + "/v1/namespaces/zero/"
	for _, tc := range []struct {
		plural, doc string
		kind        v4.Kind
	}{
		{"applications", strings.NewReplacer(`"instance":1`, `"instance":3`).Replace(appDoc("zero", "busybox:1")), v4.KindApplication},
		{"processes", procJSON("zero", "web", 3), v4.KindProcess},
		{"deployments", deployJSON("zero", "web", "one"), v4.KindDeployment},
	} {
		t.Run(tc.plural, func(t *testing.T) {
			wantStatus(t, call(t, http.MethodPost, v1+tc.plural, tc.doc), http.StatusCreated)
			r := call(t, http.MethodPost, v1+tc.plural+"/web/scale", `{"instances": 0}`)
			wantStatus(t, r, http.StatusAccepted)
			var acc v4.Accepted
			if err := json.Unmarshal(r.body, &acc); err != nil || acc.Operation == nil || acc.Operation.Message != "scale from 3 to 0" {
				t.Fatalf("answer %s (%v)", r.body, err)
			}
			if n := storedInstances(t, url, tc.plural); n != 0 {
				t.Fatalf("stored spec.instance %d after a scale to 0", n)
			}
			storetest.FlushEvents(t, testStore)
			evs := string(call(t, http.MethodGet, url+"/v1/events?kind="+string(tc.kind)+"&namespace=zero&name=web", "").body)
			if !strings.Contains(evs, `"scaled from 3 to 0`) {
				t.Fatalf("no Scaled event from 3 to 0: %s", evs)
			}

			// A newer scale replaces the one in progress: back up.
			wantStatus(t, call(t, http.MethodPost, v1+tc.plural+"/web/scale", `{"instances": 2}`), http.StatusAccepted)
			if n := storedInstances(t, url, tc.plural); n != 2 {
				t.Fatalf("stored spec.instance %d after a scale to 2", n)
			}
			storetest.FlushEvents(t, testStore)
			evs = string(call(t, http.MethodGet, url+"/v1/events?kind="+string(tc.kind)+"&namespace=zero&name=web", "").body)
			if !strings.Contains(evs, `"reason":"Scaled"`) || !strings.Contains(evs, `"message":"scaled from 0 to 2"`) {
				t.Fatalf("no Scaled event from 0 to 2: %s", evs)
			}
			// An applied spec with instance 0 is a scale to zero too.
			doc := strings.NewReplacer(`"instance":3`, `"instance":0`).Replace(tc.doc)
			wantStatus(t, call(t, http.MethodPut, v1+tc.plural+"/web", doc), http.StatusOK)
			if n := storedInstances(t, url, tc.plural); n != 0 {
				t.Fatalf("stored spec.instance %d after applying instance 0", n)
			}
		})
	}
}

func storedInstances(t *testing.T, url, plural string) int {
	t.Helper()
	r := call(t, http.MethodGet, url+"/v1/namespaces/zero/"+plural+"/web", "")
	wantStatus(t, r, http.StatusOK)
	var o struct {
		Spec struct{ Instance int } `json:"spec"`
	}
	if err := json.Unmarshal(r.body, &o); err != nil {
		t.Fatal(err)
	}
	return o.Spec.Instance
}

// A scale that cannot be taken changes nothing and names the field; a token limited to
// one namespace cannot stop another namespace's workload by scaling it to 0.
func TestScaleToZeroRefusals(t *testing.T) {
	url := newTestServer(t, Config{})
	procs := url + "/v1/namespaces/zero/processes"
	wantStatus(t, call(t, http.MethodPost, procs, procJSON("zero", "web", 3)), http.StatusCreated)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/other/processes", procJSON("other", "web", 3)), http.StatusCreated)
	for _, tc := range []struct{ name, body, msg string }{
		{"negative", `{"instances": -1}`, "must not be negative"},
		{"missing", `{}`, "required"},
		{"null", `{"instances": null}`, "required"},
		{"too many", fmt.Sprintf(`{"instances": %d}`, v4.MaxInstances+1), "at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, http.MethodPost, procs+"/web/scale", tc.body)
			wantStatus(t, r, http.StatusUnprocessableEntity)
			e := decodeError(t, r)
			if len(e.Details) != 1 || e.Details[0].Field != "instances" || !strings.Contains(e.Details[0].Message, tc.msg) {
				t.Fatalf("details %v, want instances: ...%s...", e.Details, tc.msg)
			}
			if n := storedInstances(t, url, "processes"); n != 3 {
				t.Fatalf("a refused scale changed spec.instance to %d", n)
			}
		})
	}
	const policy = `kind: acl-policy
metadata: {name: zero-only}
rules:
  - namespaces: [zero]
    kinds: ["*"]
    verbs: [read, write, scale]
`
	token := tokenWithPolicy(t, url, policy, "zero-only", "")
	r := callAs(t, "", http.MethodPost, url+"/v1/namespaces/other/processes/web/scale", `{"instances": 0}`, token)
	wantStatus(t, r, http.StatusForbidden)
	o := call(t, http.MethodGet, url+"/v1/namespaces/other/processes/web", "")
	if !strings.Contains(string(o.body), `"instance":3`) {
		t.Fatalf("another namespace's process after a refused scale: %s", o.body)
	}
	wantStatus(t, callAs(t, "", http.MethodPost, procs+"/web/scale", `{"instances": 0}`, token), http.StatusAccepted)
}

// BCS's scale route keeps BCS's answer for 0 (BCS refused it) and leaves the count.
func TestBCSScaleToZeroKeepsBCSAnswer(t *testing.T) {
	url := newTestServer(t, Config{})
	base := url + bcs.GatewayPrefix + "/namespaces/zero"
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/zero/processes", procJSON("zero", "web", 3)), http.StatusCreated)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/zero/deployments", deployJSON("zero", "dep", "one")), http.StatusCreated)
	for _, path := range []string{"/processes/web/scale/0", "/deployments/dep/scale/0", "/processes/web/scale/-2"} {
		a := bcsCall(t, http.MethodPut, base+path, "", "")
		if a.status != http.StatusOK || a.Code != bcs.CodeBadRequestData || a.Result || !strings.Contains(a.Message, "at least 1") {
			t.Errorf("PUT %s: HTTP %d %+v, want BCS's code %d, at least 1", path, a.status, a, bcs.CodeBadRequestData)
		}
	}
	if n := storedInstances(t, url, "processes"); n != 3 {
		t.Errorf("process after BCS's refused scale: %d instances", n)
	}
	if d := getDeployment(t, "zero", "dep"); d.Spec.Instance != 3 {
		t.Errorf("deployment after BCS's refused scale: %d instances", d.Spec.Instance)
	}
}
