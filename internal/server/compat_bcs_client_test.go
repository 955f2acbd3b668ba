package server

import (
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/bcs"
	"github.com/berthhq/berth/internal/compat/bcs/bcswire"
	"github.com/berthhq/berth/internal/store/storetest"
)

// tenantBA may do everything in namespace ba only: an attacker to every other namespace.
const tenantBA = `kind: acl-policy
metadata: {name: tenant-ba}
rules:
  - {namespaces: [ba], kinds: ["*", secret], verbs: [read, write, logs, exec, scale]}
`

// BCS's router served its routes with a trailing slash too, and bcs-client sends some
// so (`as -l` asks .../agentsettings/?ips=): berth serves them as without it, under both
// prefixes, with the same policies; /v1 keeps its one clean form.
func TestBCSTrailingSlash(t *testing.T) {
	url := newTestServer(t, Config{})
	storetest.CreateNode(t, testStore, "node-ts", v4.NodeResources{CPU: 8, MemoryMB: 16384, DiskMB: 1000}, func(n *v4.Node) {
		n.Spec.IP = "10.0.7.1"
	})
	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", procJSON("ba", "web", 1)), http.StatusOK)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", procJSON("bb", "web", 1)), http.StatusOK)
	for _, prefix := range []string{bcs.DriverPrefix, bcs.GatewayPrefix} {
		wantBCS(t, bcsCall(t, http.MethodGet, url+prefix+"/agentsettings/?ips=10.0.7.1", "", ""), 0)
		wantBCS(t, bcsCall(t, http.MethodGet, url+prefix+"/namespaces/ba/processes/web/", "", ""), 0)
		wantBCS(t, bcsCall(t, http.MethodGet, url+prefix+"/namespaces/ba/processes/", "", ""), 0)
	}
	tok := tokenWithPolicy(t, url, tenantBA, "tenant-ba", "")
	wantBCS(t, bcsCall(t, http.MethodGet, url+bcs.DriverPrefix+"/namespaces/ba/processes/web/", "", tok), 0)
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/namespaces/bb/processes/web/"},
		{http.MethodGet, "/namespaces/bb/processes/"},
		{http.MethodDelete, "/namespaces/bb/processes/web/"},
		{http.MethodPut, "/namespaces/bb/processes/web/scale/3/"},
	} {
		a := bcsCall(t, c.method, url+bcs.DriverPrefix+c.path, "", tok)
		if a.status != http.StatusForbidden || a.Result {
			t.Errorf("another namespace's token %s %s: HTTP %d %+v", c.method, c.path, a.status, a)
		}
	}
	if _, err := testStore.Get(t.Context(), v4.KindProcess, "bb", "web"); err != nil {
		t.Fatalf("bb/web after another namespace's token: %v", err)
	}
	if r := call(t, http.MethodGet, url+"/v1/namespaces/ba/processes/web/", ""); r.code == http.StatusOK {
		t.Errorf("/v1 with a trailing slash: %d %s, want it refused", r.code, r.body)
	}
}

// A body that is not JSON is BCS's 1405010 on every route that reads one, as BCS's
// driver answered it; JSON without the fields berth needs is 1405008. Neither writes.
func TestBCSBodyNotJSON(t *testing.T) {
	url := newTestServer(t, Config{})
	base := url + bcs.DriverPrefix
	routes := []struct{ method, path string }{
		{http.MethodPost, "/agentsettings"},
		{http.MethodPut, "/agentsettings/taint"},
		{http.MethodPost, "/namespaces/nj/daemonset"},
		{http.MethodPut, "/namespaces/nj/daemonset"},
		{http.MethodPost, "/namespaces/nj/applications/web/message"},
	}
	for _, plural := range []string{"applications", "processes", "deployments", "configmaps", "secrets", "services"} {
		routes = append(routes, struct{ method, path string }{http.MethodPost, "/namespaces/nj/" + plural},
			struct{ method, path string }{http.MethodPut, "/namespaces/nj/" + plural})
	}
	for _, c := range routes {
		for _, body := range []string{"not json", `{"kind":`, `"a string"`} {
			if a := bcsCall(t, c.method, base+c.path, body, ""); a.Code != bcs.CodeJSONDecode || a.status != http.StatusOK {
				t.Errorf("%s %s %q: HTTP %d %+v, want 1405010", c.method, c.path, body, a.status, a)
			}
		}
	}
	for _, plural := range []string{"applications", "processes", "deployments", "configmaps"} {
		wantBCS(t, bcsCall(t, http.MethodPost, base+"/namespaces/nj/"+plural, `{"kind":"x","metadata":{}}`, ""), bcs.CodeBadRequestData)
	}
	r := call(t, http.MethodGet, url+"/v1/namespaces/nj/applications", "")
	if r.code != http.StatusOK || strings.Contains(string(r.body), `"name"`) {
		t.Errorf("namespace nj after refused bodies: %d %s", r.code, r.body)
	}
}

// Deleting a configmap or a secret in use through BCS's routes: refused, the refusal
// naming BCS's enforce; with enforce=1 (bcs-client --enforce 1) deleted as BCS did, with
// a warning naming the workloads left without it. Another namespace's token gets 403.
func TestBCSDeleteConfigEnforce(t *testing.T) {
	url := newTestServer(t, Config{})
	const ns = "ba"
	body := cmJSON(ns, "cfg", "eA==") + "\n" + secretJSON(ns, "sec", "password") + "\n" + refProcJSON(ns, "web", "cfg", "k", "sec", "password")
	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", body), http.StatusOK)
	tok := tokenWithPolicy(t, url, tenantBA, "tenant-ba", "")
	other := tokenWithPolicy(t, url, strings.ReplaceAll(tenantBA, "ba", "bz"), "tenant-bz", "")
	for _, c := range []struct {
		plural, name string
		kind         v4.Kind
	}{{"configmaps", "cfg", v4.KindConfigMap}, {"secrets", "sec", v4.KindSecret}} {
		path := url + bcs.GatewayPrefix + "/namespaces/" + ns + "/" + c.plural + "/" + c.name
		a := bcsCall(t, http.MethodDelete, path, "", tok)
		wantBCS(t, a, bcs.CodeScheduler)
		if !strings.Contains(a.Message, "process ba/web") || !strings.Contains(a.Message, "enforce=1") || strings.Contains(a.Message, "force=true") {
			t.Errorf("%s in use: %q", c.plural, a.Message)
		}
		wantBCS(t, bcsCall(t, http.MethodDelete, path+"?enforce=maybe", "", tok), bcs.CodeDriverParameter)
		wantBCS(t, bcsCall(t, http.MethodDelete, path+"?enforce=0", "", tok), bcs.CodeScheduler)
		if a := bcsCall(t, http.MethodDelete, path+"?enforce=1", "", other); a.status != http.StatusForbidden || a.Result {
			t.Errorf("another namespace's token with enforce: HTTP %d %+v", a.status, a)
		}
		if _, err := testStore.Get(t.Context(), c.kind, ns, c.name); err != nil {
			t.Fatalf("%s after refusals: %v", c.plural, err)
		}
		a = bcsCall(t, http.MethodDelete, path+"?enforce=1", "", tok)
		wantBCS(t, a, 0)
		if len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], "process ba/web") || len(a.header.Values("Warning")) != 1 {
			t.Errorf("%s enforced: warnings %q", c.plural, a.Warnings)
		}
		if _, err := testStore.Get(t.Context(), c.kind, ns, c.name); !errorsIsNotFound(err) {
			t.Errorf("%s after enforce: %v", c.plural, err)
		}
	}
}

// BCS stored processes as applications: its clients read and signal a process through
// /applications/{name}/...; writes there are refused, naming the processes route. The
// same policies answer: another namespace's token gets 403.
func TestBCSProcessAsApplication(t *testing.T) {
	url := newTestServer(t, Config{})
	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", procJSON("ba", "web", 1)), http.StatusOK)
	putTaskGroup(t, "ba", "0.web.ba.c.1", "n1", nil)
	tok := tokenWithPolicy(t, url, tenantBA, "tenant-ba", "")
	other := tokenWithPolicy(t, url, strings.ReplaceAll(tenantBA, "ba", "bz"), "tenant-bz", "")
	base := url + bcs.GatewayPrefix + "/namespaces/ba/applications/web"
	a := bcsCall(t, http.MethodGet, base, "", tok)
	wantBCS(t, a, 0)
	if !strings.Contains(string(a.Data), `"Kind":"process"`) || !strings.Contains(string(a.Data), "0.web.ba.c.1") {
		t.Errorf("the process as an application: %s", a.Data)
	}
	a = bcsCall(t, http.MethodGet, base+"/taskgroups", "", tok)
	wantBCS(t, a, 0)
	if !strings.Contains(string(a.Data), "0.web.ba.c.1") {
		t.Errorf("the process's task groups: %s", a.Data)
	}
	wantBCS(t, bcsCall(t, http.MethodGet, base+"/versions", "", tok), 0)
	// The message reaches the process's task group (its node has no agent here, so the
	// answer lists it as not reached: a missing application would be 1405202).
	a = bcsCall(t, http.MethodPost, base+"/message", `{"msgtype":"signal","msgdata":{"signal":1,"processname":"web"}}`, tok)
	wantBCS(t, a, 0)
	var failed []bcswire.SendFailure // as BCS's SendMessage answer decodes
	if err := bcswire.Decode(a.Data, &failed); err != nil || len(failed) != 1 || failed[0].ID != "0.web.ba.c.1" {
		t.Errorf("the process's message: %v %s", err, a.Data)
	}
	for _, c := range []struct{ method, path string }{{http.MethodPut, "/scale/3"}, {http.MethodDelete, ""}} {
		a := bcsCall(t, c.method, base+c.path, "", tok)
		wantBCS(t, a, bcs.CodeNotFound)
		if !strings.Contains(a.Message, "processes/web") {
			t.Errorf("%s %s of a process as an application: %q", c.method, c.path, a.Message)
		}
	}
	wantBCS(t, bcsCall(t, http.MethodGet, url+bcs.GatewayPrefix+"/namespaces/ba/applications/none", "", tok), bcs.CodeNotFound)
	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, "", ""}, {http.MethodGet, "/taskgroups", ""}, {http.MethodDelete, "", ""},
		{http.MethodPost, "/message", `{"msgtype":"signal","msgdata":{"signal":1}}`},
	} {
		if a := bcsCall(t, c.method, base+c.path, c.body, other); a.status != http.StatusForbidden || a.Result {
			t.Errorf("another namespace's token %s %s: HTTP %d %+v", c.method, c.path, a.status, a)
		}
	}
	p, err := testStore.Get(t.Context(), v4.KindProcess, "ba", "web")
	if err != nil || p.(*v4.Process).Spec.Instance != 1 {
		t.Errorf("the process after refused writes: %v %+v", err, p)
	}
}

// BCS's reschedule relaunched a task group from any offer, its own host included: on a
// one-node cluster berth's reschedule moves the instance to the same node, where /v1's
// move to another node is refused. Another namespace's token gets 403 and moves nothing.
func TestBCSRescheduleOnOneNode(t *testing.T) {
	base := newTestServer(t, Config{})
	wantStatus(t, call(t, http.MethodPost, base+"/v1/nodes", nodeJSON("only", "")), http.StatusCreated)
	wantStatus(t, call(t, http.MethodPost, base+"/v1/namespaces/ba/processes", procJSON("ba", "web", 1)), http.StatusCreated)
	web := runningTG(t, "ba", "web", "only")
	v1 := base + "/v1/namespaces/ba/taskgroups/" + web.Metadata.Name + "/move"
	r := eventuallyStatus(t, http.MethodPost, v1, "", http.StatusUnprocessableEntity, "no node other than only")
	if !strings.Contains(string(r.body), "no node other than only can take instance 0") {
		t.Fatalf("/v1 move on one node: %s", r.body)
	}
	other := tokenWithPolicy(t, base, strings.ReplaceAll(tenantBA, "ba", "bz"), "tenant-bz", "")
	path := base + bcs.DriverPrefix + "/namespaces/ba/processes/web/taskgroups/" + web.Metadata.Name + "/rescheduler"
	if a := bcsCall(t, http.MethodPut, path, "", other); a.status != http.StatusForbidden || a.Result {
		t.Fatalf("another namespace's token: HTTP %d %+v", a.status, a)
	}
	if op, _ := testStore.Operation(t.Context(), v4.KindProcess, "ba", "web"); op != nil {
		t.Fatalf("another namespace's token began %+v", op)
	}
	tok := tokenWithPolicy(t, base, tenantBA, "tenant-ba", "")
	wantBCS(t, bcsCall(t, http.MethodPut, path, "", tok), 0)
	tg := getTaskGroup(t, "ba", web.Metadata.Name)
	if tg.Metadata.Annotations[v4.MoveToAnnotation] != v4.MoveAnywhereOrHere {
		t.Fatalf("the rescheduled task group's annotations: %v", tg.Metadata.Annotations)
	}
}

// bcs-client's `as -u` sets one attribute on the nodes of its IPs, their others kept; a
// bad update is refused naming the field, and a token that may not write nodes (one
// namespace's) gets 403 and changes nothing.
func TestBCSAgentSettingUpdate(t *testing.T) {
	url := newTestServer(t, Config{})
	storetest.CreateNode(t, testStore, "node-up", v4.NodeResources{CPU: 8, MemoryMB: 16384, DiskMB: 1000}, func(n *v4.Node) {
		n.Spec.IP = "10.0.8.1"
		n.Spec.Attributes.Text = map[string]string{"rack": "r1"}
	})
	path := url + bcs.DriverPrefix + "/agentsettings/update"
	tok := tokenWithPolicy(t, url, tenantBA, "tenant-ba", "")
	if a := bcsCall(t, http.MethodPost, path, `{"ips":["10.0.8.1"],"name":"zone","valuetype":103,"text":{"value":"z9"}}`, tok); a.status != http.StatusForbidden || a.Result {
		t.Errorf("a namespace's token: HTTP %d %+v", a.status, a)
	}
	wantBCS(t, bcsCall(t, http.MethodPost, path, `{"ips":["10.0.8.1"],"name":"zone","valuetype":103,"text":{"value":"z1"}}`, ""), 0)
	wantBCS(t, bcsCall(t, http.MethodPost, path, `{"ips":["10.0.8.1"],"name":"weight","valuetype":101,"scalar":{"value":2.5}}`, ""), 0)
	n := getNode(t, "node-up")
	if a := n.Spec.Attributes; a.Text["rack"] != "r1" || a.Text["zone"] != "z1" || a.Scalar["weight"] != 2.5 {
		t.Fatalf("attributes after the updates: %+v", a)
	}
	many := `{"ips":[` + strings.Repeat(`"10.0.8.1",`, 1000) + `"10.0.8.1"],"name":"zone","valuetype":103,"text":{"value":"z2"}}`
	for _, c := range []struct{ body, field string }{
		{`{"ips":[],"name":"zone","valuetype":103,"text":{"value":"z2"}}`, "ips"},
		{many, "ips"},
		{`{"ips":["10.0.8.1"],"valuetype":103,"text":{"value":"z2"}}`, "name"},
		{`{"ips":["10.0.8.1"],"name":"zone","valuetype":103}`, "text"},
		{`{"ips":["10.0.8.1"],"name":"zone","valuetype":101}`, "scalar"},
		{`{"ips":["10.0.8.1"],"name":"zone","valuetype":104,"text":{"value":"z2"}}`, "valuetype"},
		{`{"ips":["10.0.8.1,10.0.8.2"],"name":"zone","valuetype":103,"text":{"value":"z2"}}`, "ips[0]"},
	} {
		a := bcsCall(t, http.MethodPost, path, c.body, "")
		wantBCS(t, a, bcs.CodeBadRequestData)
		if !strings.HasPrefix(a.Message, c.field+":") {
			t.Errorf("%.80s: %q, want it to name %s", c.body, a.Message, c.field)
		}
	}
	wantBCS(t, bcsCall(t, http.MethodPost, path, `{"ips":["10.9.9.9"],"name":"zone","valuetype":103,"text":{"value":"z2"}}`, ""), bcs.CodeNotFound)
	wantBCS(t, bcsCall(t, http.MethodPost, path, `[1]`, ""), bcs.CodeJSONDecode)
	if a := getNode(t, "node-up").Spec.Attributes; a.Text["zone"] != "z1" {
		t.Errorf("a refused update changed the node: %+v", a)
	}
}
