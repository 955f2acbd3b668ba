package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store/storetest"
)

// writeRouteCase is one invalid request to a write route.
type writeRouteCase struct {
	pattern string // the route as registered (routes.go)
	method  string
	path    string
	body    string
	code    int    // the 4xx expected
	field   string // a detail that must name this field ("" for none)
}

// invalidWrites is an invalid request for every write route of the API. A route added
// later without a case here fails TestEveryWriteRouteValidates.
func invalidWrites() []writeRouteCase {
	const ns = "/v1/namespaces/adm"
	huge := `{"instances": 1000000000000000}`
	return []writeRouteCase{
		{"POST /v1/namespaces/{ns}/{plural}", "POST", ns + "/processes", procJSON("adm", "other", -1), 422, "spec.instance"},
		{"POST /v1/namespaces/{ns}/{plural}", "POST", ns + "/processes", procJSON("adm", "other", v4.MaxInstances+1), 422, "spec.instance"},
		{"PUT /v1/namespaces/{ns}/{plural}/{name}", "PUT", ns + "/processes/web", procJSON("adm", "web", 1e9), 422, "spec.instance"},
		{"DELETE /v1/namespaces/{ns}/{plural}/{name}", "DELETE", ns + "/processes/web?resourceVersion=x", "", 400, ""},
		{"POST /v1/namespaces/{ns}/{plural}/{name}/scale", "POST", ns + "/processes/web/scale", huge, 422, "instances"},
		{"POST /v1/namespaces/{ns}/{plural}/{name}/scale", "POST", ns + "/deployments/dep/scale", huge, 422, "instances"},
		{"POST /v1/namespaces/{ns}/{plural}/{name}/scale", "POST", ns + "/processes/web/scale", `{"instances": -1}`, 422, "instances"},
		{"POST /v1/namespaces/{ns}/{plural}/{name}/scale", "POST", ns + "/processes/web/scale", `{"instances": 1e30}`, 400, "instances"},
		{"POST /v1/namespaces/{ns}/{plural}/{name}/replace", "POST", ns + "/processes/web/replace", huge, 422, "instances"},
		{"POST /v1/namespaces/{ns}/{plural}/{name}/replace", "POST", ns + "/processes/web/replace", `{"instances": -1}`, 422, "instances"},
		{"POST /v1/namespaces/{ns}/{plural}/{name}/replace", "POST", ns + "/processes/web/replace", `{"instances": "2"}`, 400, "instances"},
		{"POST /v1/namespaces/{ns}/{plural}/{name}/replace", "POST", ns + "/processes/web/replace", `{"instance": 2}`, 400, "instances"},
		{"POST /v1/namespaces/{ns}/deployments/{name}/rollout/{action}", "POST", ns + "/deployments/dep/rollout/undo?revision=-1", "", 400, "revision"},
		{"POST /v1/namespaces/{ns}/deployments/{name}/rollout/{action}", "POST", ns + "/deployments/dep/rollout/explode", "", 404, ""},
		{"POST /v1/namespaces/{ns}/cronjobs/{name}/actions/trigger", "POST", ns + "/cronjobs/nope/actions/trigger", "", 404, ""},
		{"POST /v1/namespaces/{ns}/cronworkflows/{name}/actions/trigger", "POST", ns + "/cronworkflows/nope/actions/trigger", "", 404, ""},
		{"POST /v1/nodes", "POST", "/v1/nodes", strings.Replace(nodeJSON("n2", ""), "10.0.0.1", "10.0.0.999", 1), 422, "spec.ip"},
		{"PUT /v1/nodes/{name}", "PUT", "/v1/nodes/n1", strings.Replace(nodeJSON("n1", ""), `"cpu":8`, `"cpu":-8`, 1), 422, "spec.capacity.cpu"},
		{"PATCH /v1/nodes/{name}", "PATCH", "/v1/nodes/n1", `{"spec":{"portRanges":[{"begin":500,"end":100}]}}`, 422, "spec.portRanges[0]"},
		{"PATCH /v1/nodes/{name}", "PATCH", "/v1/nodes/n1", `{"status":{"phase":"Dancing"}}`, 422, "status.phase"},
		{"DELETE /v1/nodes/{name}", "DELETE", "/v1/nodes/n1?resourceVersion=-1", "", 400, ""},
		{"POST /v1/namespaces/{ns}/taskgroups/{name}/move", "POST", ns + "/taskgroups/0.web.adm.c.1/move", `{"node": 7}`, 400, "node"},
		{"POST /v1/nodes/{name}/drain", "POST", "/v1/nodes/n1/drain?force=perhaps", "", 400, ""},
		{"PUT /v1/engine", "PUT", "/v1/engine", `{"maintenance": "yes"}`, 400, ""},
		{"POST /v1/namespaces/{ns}/{plural}", "POST", ns + "/widgets.example.com", widget("adm", "w", "1"), 404, ""},
		{"POST /v1/customresourcedefinitions", "POST", "/v1/customresourcedefinitions", strings.Replace(widgetCRD, "Namespaced", "Cluster", 1), 422, "spec.scope"},
		{"POST /v1/customresourcedefinitions", "POST", "/v1/customresourcedefinitions", strings.Replace(widgetCRD, `"widgets"`, `"../x"`, 1), 422, "spec.names.plural"},
		{"PUT /v1/customresourcedefinitions/{name}", "PUT", "/v1/customresourcedefinitions/gadgets.example.com", widgetCRD, 422, "metadata.name"},
		{"DELETE /v1/customresourcedefinitions/{name}", "DELETE", "/v1/customresourcedefinitions/widgets.example.com?resourceVersion=x", "", 400, "resourceVersion"},
		// Admission webhooks and certificate requests (webhooks.go, certificates.go).
		{"POST /v1/admissionwebhooks", "POST", "/v1/admissionwebhooks", `{"kind":"admissionwebhook","metadata":{"name":"h"},"webhooks":[{"name":"h","clientConfig":{"url":"http://h.example"},"rules":[{"operations":["*"],"kinds":["*"]}]}]}`, 422, "webhooks[0].clientConfig.url"},
		{"PUT /v1/admissionwebhooks/{name}", "PUT", "/v1/admissionwebhooks/other", strings.Replace(`{"kind":"admissionwebhook","metadata":{"name":"h"},"webhooks":[{"name":"h","clientConfig":{"url":"http://h.example"},"rules":[{"operations":["*"],"kinds":["*"]}]}]}`, "http:", "https:", 1), 400, "metadata.name"},
		{"DELETE /v1/admissionwebhooks/{name}", "DELETE", "/v1/admissionwebhooks/none", "", 404, ""},
		{"POST /v1/certificaterequests", "POST", "/v1/certificaterequests", `{"csr":"junk"}`, 422, "csr"},
		{"POST /v1/certificaterequests/{name}/approve", "POST", "/v1/certificaterequests/none/approve", "", 404, ""},
		{"POST /v1/certificaterequests/{name}/deny", "POST", "/v1/certificaterequests/none/deny", "", 404, ""},
		{"DELETE /v1/certificaterequests/{name}", "DELETE", "/v1/certificaterequests/none", "", 404, ""},
		{"PUT /v1/namespaces/{ns}/quota", "PUT", ns + "/quota", `{"objects": -1}`, 422, "objects"},
		{"DELETE /v1/namespaces/{ns}/quota", "DELETE", "/v1/namespaces/Bad_NS/quota", "", 400, "namespace"},
		{"PUT /v1/priorityclasses/{name}", "PUT", "/v1/priorityclasses/high", `{"value": 1, "preemptionPolicy": "Always"}`, 422, "preemptionPolicy"},
		{"DELETE /v1/priorityclasses/{name}", "DELETE", "/v1/priorityclasses/Bad_Name", "", 400, "name"},
		{"POST /v1/apply", "POST", "/v1/apply", cmJSON("adm", "fine", "eA==") + "\n" + procJSON("adm", "bad", 1e9), 422, "spec.instance"},
		{"POST /v1/plan", "POST", "/v1/plan", procJSON("adm", "bad", -1), 422, "spec.instance"},
		{"POST /v1/agent/register", "POST", "/v1/agent/register", strings.Replace(nodeJSON("n1", ""), `"memoryMB":16384`, `"memoryMB":-1`, 1), 422, "spec.capacity.memoryMB"},
		{"PUT /v1/agent/nodes/{name}/heartbeat", "PUT", "/v1/agent/nodes/n1/heartbeat", `{"agentVersion": 3}`, 400, ""},
		{"POST /v1/agent/nodes/{name}/heartbeats", "POST", "/v1/agent/nodes/n1/heartbeats", `{"agentVersion": 3}` + "\n", 400, ""},
		{"POST /v1/agent/nodes/{name}/report", "POST", "/v1/agent/nodes/n1/report", `{"taskGroups":[{"namespace":"adm","name":"0.web.adm.c.1","status":{"phase":"Exploded"}}]}`, 422, "status.phase"},
		{"POST /v1/agent/nodes/{name}/statuses", "POST", "/v1/agent/nodes/n1/statuses", `{"taskGroups":[{"namespace":"adm","status":{"phase":"Running"}}]}`, 400, "taskGroups[0]"},
		{"POST /v1/agent/nodes/{name}/events", "POST", "/v1/agent/nodes/n1/events", `{"type":"Warning","reason":"no spaces allowed","message":"m"}`, 422, "reason"},
		{"POST /v1/agent/volumes/claim", "POST", "/v1/agent/volumes/claim", `{"namespace":"adm","volume":"","taskgroup":"0.web.adm.c.1"}`, 400, "volume"},
		{"POST /v1/agent/volumes/release", "POST", "/v1/agent/volumes/release", `{"namespace":"adm","volume":"v"}`, 400, "taskgroup"},
		{"PUT /v1/agent/artifacts", "PUT", "/v1/agent/artifacts?namespace=adm&taskgroup=0.web.adm.c.1", "bytes", 400, "artifact"},
		{"PUT /v1/agent/nodes/{name}/csiplugins", "PUT", "/v1/agent/nodes/n1/csiplugins", `{"plugins":[{"name":"p.csi","healthy":true,"maxVolumes":-1}]}`, 422, "maxVolumes"},
		{"PUT /v1/agent/nodes/{name}/busyports", "PUT", "/v1/agent/nodes/n1/busyports", `{"busyPorts":[{"port":70000,"protocol":"tcp"}]}`, 422, "busyPorts[0].port"},
		{"PUT /v1/agent/nodes/{name}/revocable", "PUT", "/v1/agent/nodes/n1/revocable", `{"time":"2026-11-30T12:00:00Z","maxFraction":7}`, 422, "maxFraction"},
		{"PUT /v1/agent/taskgroups/{ns}/{name}/status", "PUT", "/v1/agent/taskgroups/adm/0.web.adm.c.1/status", `{"phase":"Exploded"}`, 422, "status.phase"},
		{"PUT /v1/agent/taskgroups/{ns}/{name}/status", "PUT", "/v1/agent/taskgroups/adm/0.web.adm.c.1/status", `{"phase":"Running","tasks":[` + strings.Repeat(`{"name":"t","status":"Running","info":{}},`, 300) + `{"name":"t","status":"Running","info":{}}]}`, 422, "status.tasks"},
		{"POST /v1/namespaces/{ns}/taskgroups/{name}/actions/{action}", "POST", ns + "/taskgroups/0.web.adm.c.1/actions/explode", "", 404, ""},
		{"POST /v1/namespaces/{ns}/taskgroups/{name}/actions/{action}", "POST", ns + "/taskgroups/0.web.adm.c.1/actions/signal?signal=SIGNOPE", "", 400, "signal"},
		{"POST /v1/namespaces/{ns}/taskgroups/{name}/exec", "POST", ns + "/taskgroups/0.web.adm.c.1/exec?command=", "", 400, ""},
		{"POST /v1/cluster/members", "POST", "/v1/cluster/members", `{"name": 5}`, 400, ""},
		{"POST /v1/cluster/recover", "POST", "/v1/cluster/recover", `{"compact": "everything"}`, 400, ""},
		{"POST /v1/encryption/rewrap", "POST", "/v1/encryption/rewrap", `{"key": "k2"}`, 400, ""},
		{"POST /v1/agent/certificate", "POST", "/v1/agent/certificate", `{"nodeName":"Bad_Name","csr":""}`, 400, "nodeName"},
		{"POST /v1/agent/certificate/renew", "POST", "/v1/agent/certificate/renew", `{"csr":"junk"}`, 400, "csr"},
		{"POST /v1/jointokens", "POST", "/v1/jointokens", `{"role":"king"}`, 422, "role"},
		{"DELETE /v1/jointokens/{id}", "DELETE", "/v1/jointokens/berth-nope00", "", 404, ""},
		{"POST /v1/acl/can-i", "POST", "/v1/acl/can-i", `{"verb":"fly","kind":"process"}`, 422, "verb"},
		{"POST /v1/acl/tokens", "POST", "/v1/acl/tokens", `{"policies":["nope"]}`, 422, "policies[0]"},
		{"DELETE /v1/acl/tokens/{id}", "DELETE", "/v1/acl/tokens/berth-acl-nope00", "", 404, ""},
		{"POST /v1/acl/tokens/{id}/certificate", "POST", "/v1/acl/tokens/berth-acl-nope00/certificate", `{"csr":"junk"}`, 422, "csr"},
		{"POST /v1/namespaces/{ns}/{plural}/{name}/instances/{index}/{action}", "POST", ns + "/processes/web/instances/-1/stop", "", 400, "index"},
		{"POST /v1/namespaces/{ns}/{plural}/{name}/instances/{index}/{action}", "POST", ns + "/processes/web/instances/0/explode", "", 404, ""},
		{"PUT /v1/acl/policies/{name}", "PUT", "/v1/acl/policies/bad", "kind: acl-policy\nmetadata: {name: bad}\nrules: []\n", 422, "rules"},
		{"DELETE /v1/acl/policies/{name}", "DELETE", "/v1/acl/policies/nope", "", 404, ""},
		{"POST /v1/namespaces/{ns}/workflows/{name}/actions/{action}", "POST", ns + "/workflows/w/actions/explode", "", 404, ""},
		{"POST /v1/namespaces/{ns}/workflows/{name}/actions/{action}", "POST", ns + "/workflows/w/actions/resume", `{"node":"a,b"}`, 400, "node"},
		{"POST /v1/namespaces/{ns}/workflows/{name}/actions/{action}", "POST", ns + "/workflows/w/actions/resume", `{"node":5}`, 400, ""},
		{"DELETE /v1/namespaces/{ns}/archivedworkflows/{name}", "DELETE", ns + "/archivedworkflows/w?uid=a/b", "", 400, "uid"},
		{"POST /v1/namespaces/{ns}/archivedworkflows/{name}/actions/{action}", "POST", ns + "/archivedworkflows/w/actions/resubmit", `{"parameters":5}`, 400, ""},
	}
}

// TestEveryWriteRouteValidates walks every route that writes (POST, PUT, PATCH, DELETE)
// with an invalid request: each answers its 4xx naming the field, and etcd's revision
// does not move (nothing stored, not even an event).
func TestEveryWriteRouteValidates(t *testing.T) {
	srv, url := newTestServerOf(t, Config{})
	ctx := context.Background()
	for _, body := range []string{procJSON("adm", "web", 2), deployJSON("adm", "dep", "one")} {
		wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", body), http.StatusOK)
	}
	wantStatus(t, call(t, http.MethodPost, url+"/v1/nodes", nodeJSON("n1", "")), http.StatusCreated)
	putTaskGroup(t, "adm", "0.web.adm.c.1", "n1", nil)
	storetest.FlushEvents(t, testStore) // the setup's queued events land before the first case
	// Each call is authenticated as its route wants (node n1's certificate, a server join
	// token, or the management token), so it reaches the validation after authentication.
	token := storetest.JoinToken(t, testStore, v4.JoinRoleServer, time.Time{}).String()
	as := func(path string) (node, tok string) {
		switch {
		case strings.HasPrefix(path, "/v1/agent/certificate"), path == "/v1/cluster/members":
			return "n1", token
		case strings.HasPrefix(path, "/v1/agent/"):
			return "n1", ""
		}
		return "", ""
	}

	cases := invalidWrites()
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.pattern] = true
	}
	for _, p := range srv.mux.Patterns() {
		method, _, _ := strings.Cut(p, " ")
		if slices.Contains([]string{"POST", "PUT", "PATCH", "DELETE"}, method) && !covered[p] {
			t.Errorf("write route %q has no invalid-request case in invalidWrites", p)
		}
		delete(covered, p)
	}
	for p := range covered {
		t.Errorf("invalidWrites names %q, which is not a route", p)
	}

	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			before := revision(t, ctx)
			node, tok := as(c.path)
			r := callAs(t, node, c.method, url+c.path, c.body, tok)
			code := r.code
			if code == http.StatusOK && strings.HasSuffix(c.path, "/heartbeats") {
				// A stream answers 200 at once; its error is its last line, in the shape
				// of an error answer.
				code = decodeError(t, r).Code
			}
			if code != c.code {
				t.Fatalf("status %d, want %d: %s", code, c.code, r.body)
			}
			e := decodeError(t, r)
			if c.field != "" && !slices.ContainsFunc(e.Details, func(d v4.FieldError) bool { return strings.Contains(d.Field, c.field) }) {
				t.Errorf("details %+v name no field %q", e.Details, c.field)
			}
			if after := revision(t, ctx); after != before {
				t.Errorf("etcd revision moved from %d to %d: the refused request stored something", before, after)
			}
		})
	}
}

// TestScaleLimitMessage checks scale's 422 names instances and the limit, as the crash
// reproduced with a deployment scaled to 10^15 instances needs.
func TestScaleLimitMessage(t *testing.T) {
	url := newTestServer(t, Config{})
	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", deployJSON("adm", "dep", "one")), http.StatusOK)
	r := call(t, http.MethodPost, url+"/v1/namespaces/adm/deployments/dep/scale", `{"instances": 1000000000000000}`)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	e := decodeError(t, r)
	limit := fmt.Sprint(v4.MaxInstances)
	if !strings.Contains(e.Message, "instances") || !strings.Contains(e.Message, limit) {
		t.Fatalf("message %q must name instances and the limit %s", e.Message, limit)
	}
	d := getDeployment(t, "adm", "dep")
	if d.Spec.Instance != 3 {
		t.Fatalf("stored instances %d, want 3", d.Spec.Instance)
	}
	if op, err := testStore.Operation(context.Background(), v4.KindDeployment, "adm", "dep"); err != nil || op != nil {
		t.Fatalf("operation %+v (%v) left by a refused scale", op, err)
	}
}

// revision is etcd's revision once the event records queued so far have landed: they
// are written in the background, so a test that checks that a call wrote nothing would
// otherwise see an earlier call's record land during it.
func revision(t *testing.T, ctx context.Context) int64 {
	t.Helper()
	storetest.FlushEvents(t, testStore)
	resp, err := testStore.Client().Get(ctx, "/berth/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}
