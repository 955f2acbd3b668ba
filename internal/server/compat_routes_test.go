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

// Every BCS route family answers in BCS's envelope with BCS's codes, through /v1's
// admission: creates, updates and deletes of each kind, the deployment's update
// controls, reads in BCS's shapes, and the failures BCS clients handle.
func TestBCSRoutes(t *testing.T) {
	url := newTestServer(t, Config{})
	base := url + bcs.GatewayPrefix + "/namespaces/bc"
	steps := []struct {
		name, method, path, body string
		code                     int
		msg                      string // part of the message, for failures
	}{
		{"configmap create", "POST", "/configmaps", cmJSON("bc", "cfg", "aGk="), 0, ""},
		{"configmap exists", "POST", "/configmaps", cmJSON("bc", "cfg", "aGk="), bcs.CodeAlreadyExists, "already exists"},
		{"configmap update", "PUT", "/configmaps", cmJSON("bc", "cfg", "aG8="), 0, ""},
		{"configmap update missing", "PUT", "/configmaps", cmJSON("bc", "nope", "aG8="), bcs.CodeNotFound, "not found"},
		{"secret create", "POST", "/secrets", secretJSON("bc", "pw", "k"), 0, ""},
		{"service create", "POST", "/services", `{"apiVersion":"v4","kind":"service","metadata":{"name":"web","namespace":"bc"},"spec":{"selector":{"app":"web"},"ports":[{"name":"http","servicePort":80}]}}`, 0, ""},
		{"process with refs", "POST", "/processes", refProcJSON("bc", "web", "cfg", "k", "pw", "k"), 0, ""},
		{"process missing ref", "POST", "/processes", refProcJSON("bc", "web2", "cfg", "zz", "pw", "k"), bcs.CodeBadRequestData, `has no key "zz"`},
		{"wrong kind for the path", "POST", "/applications", procJSON("bc", "p", 1), bcs.CodeBadRequestData, "the document is a process"},
		{"not JSON", "PUT", "/applications", "{", bcs.CodeJSONDecode, "not a JSON document"},
		{"no name", "PUT", "/applications", `{"kind":"application"}`, bcs.CodeBadRequestData, "metadata.name"},
		{"typo refused", "POST", "/processes", strings.Replace(procJSON("bc", "p", 1), `"instance"`, `"instanse"`, 1), bcs.CodeBadRequestData, "instance"},
		{"scale", "PUT", "/processes/web/scale/2", "", 0, ""},
		{"scale not a number", "PUT", "/processes/web/scale/two", "", bcs.CodeDriverParameter, "not a whole number"},
		{"scale below 1", "PUT", "/processes/web/scale/0", "", bcs.CodeBadRequestData, "at least 1"},
		{"scale unknown", "PUT", "/processes/nope/scale/2", "", bcs.CodeNotFound, "not found"},
		{"configmap in use", "DELETE", "/configmaps/cfg", "", bcs.CodeScheduler, "bc/web"},
		{"deployment create", "POST", "/deployments", deployJSON("bc", "dep", "one"), 0, ""},
		{"deployment pause", "PUT", "/deployments/dep/pauseupdate", "", 0, ""},
		{"deployment resume", "PUT", "/deployments/dep/resumeupdate", "", 0, ""},
		{"deployment cancel without update", "PUT", "/deployments/dep/cancelupdate", "", bcs.CodeScheduler, "not updating"},
		{"deployment unknown action", "PUT", "/deployments/dep/explode", "", bcs.CodeNotFound, "cancelupdate"},
		{"deployment scale", "PUT", "/deployments/dep/scale/4", "", 0, ""},
		{"deployment read", "GET", "/deployments/dep", "", 0, ""},
		{"deployment update", "PUT", "/deployments?args=resource", deployJSON("bc", "dep", "two"), 0, ""},
		{"daemonset create", "POST", "/daemonset", daemonsetJSON("bc", "agent"), 0, ""},
		{"daemonset delete", "DELETE", "/daemonset/agent?enforce=1", "", 0, ""},
		{"a signal message to every task group (none here)", "POST", "/processes/web/message", `{"msgtype":"signal","msgdata":{"signal":10,"processname":"web"}}`, 0, ""},
		{"a file message is refused", "POST", "/processes/web/message", `{"msgtype":"local","msgdata":{"to":"/etc/x","base64":"eA=="}}`, bcs.CodeUnknownMessage, "configmaps and secrets"},
		{"an unknown message type", "POST", "/processes/web/message", `{"msgtype":"dance","msgdata":{}}`, bcs.CodeUnknownMessage, "unknown message type"},
		{"a signal out of range", "POST", "/processes/web/message", `{"msgtype":"signal","msgdata":{"signal":99}}`, bcs.CodeBadRequestData, "msgdata.signal"},
		{"a signal to a task group without node", "POST", "/processes/web/taskgroups/0.web.bc.c.1/message", `{"msgtype":"signal","msgdata":{"signal":1}}`, bcs.CodeNotFound, ""},
		{"restart of a task group without node", "POST", "/processes/web/taskgroups/0.web.bc.c.1/restart", "", bcs.CodeNotFound, ""},
		{"restart of another application's task group", "POST", "/processes/web/taskgroups/0.other.bc.c.1/restart", "", bcs.CodeNotFound, "is not one of bc/web"},
		{"reschedule of another application's task group", "PUT", "/processes/web/taskgroups/0.other.bc.c.1/rescheduler", "", bcs.CodeNotFound, "is not one of bc/web"},
		{"delete", "DELETE", "/processes/web?enforce=0", "", 0, ""},
		{"delete again", "DELETE", "/processes/web", "", bcs.CodeNotFound, "not found"},
		{"service delete", "DELETE", "/services/web", "", 0, ""},
	}
	for _, s := range steps {
		a := bcsCall(t, s.method, base+s.path, s.body, "")
		if a.status != http.StatusOK || a.Code != s.code || (s.code == 0) != a.Result || !strings.Contains(a.Message, s.msg) {
			t.Errorf("%s: %s %s: HTTP %d %+v, want code %d with %q", s.name, s.method, s.path, a.status, a, s.code, s.msg)
		}
		if s.code == 0 && s.method != http.MethodGet && string(a.Data) != "null" {
			t.Errorf("%s: data %s, BCS answers writes with null", s.name, a.Data)
		}
	}
	d := getDeployment(t, "bc", "dep")
	if d.Spec.Instance != 3 || d.Spec.Template.Spec.Processes[0].Env[0].Value != "two" {
		t.Errorf("deployment after BCS's update (3 instances, V=two): %+v", d.Spec)
	}
}

// What BCS's gateway and driver refused before the scheduler keeps its HTTP status.
func TestBCSRefusals(t *testing.T) {
	url := newTestServer(t, Config{BCSClusterID: "BCS-MESOS-10001"})
	for _, c := range []struct {
		name, path, cluster string
		status, code        int
	}{
		{"no header", "/mesosdriver/v4/namespaces/x/applications", "", http.StatusBadRequest, bcs.CodeHeaderCheck},
		{"another cluster", "/mesosdriver/v4/namespaces/x/applications", "BCS-MESOS-2", http.StatusBadRequest, bcs.CodeHeaderCheck},
		{"unknown route", "/mesosdriver/v4/nothing/here", "BCS-MESOS-10001", http.StatusNotFound, bcs.CodeNotFound},
		{"listed", "/mesosdriver/v4/namespaces/x/applications", "BCS-MESOS-10001", http.StatusOK, 0},
	} {
		req, _ := http.NewRequest(http.MethodGet, url+c.path, nil)
		if c.cluster != "" {
			req.Header.Set(bcs.ClusterHeader, c.cluster)
		}
		resp, err := httpClientAs(t, "").Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Code int             `json:"code"`
			Data json.RawMessage `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if err != nil || resp.StatusCode != c.status || e.Code != c.code {
			t.Errorf("%s: HTTP %d code %d (%v), want %d and %d", c.name, resp.StatusCode, e.Code, err, c.status, c.code)
		}
		if c.code == 0 && string(e.Data) != "[]" {
			t.Errorf("%s: data %s, want an empty list", c.name, e.Data)
		}
	}
}

// BCS's routes grant what /v1's do: a read-only token reads through them and cannot
// write, and the refusal keeps its 403 with BCS's envelope.
func TestBCSAuthorization(t *testing.T) {
	url := newTestServer(t, Config{})
	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", procJSON("ro", "web", 1)), http.StatusOK)
	ro := tokenWithPolicy(t, url, readOnly, "readonly", "")
	base := url + bcs.DriverPrefix + "/namespaces/ro/processes"
	wantBCS(t, bcsCall(t, http.MethodGet, base+"/web", "", ro), 0)
	for _, c := range []struct{ method, path, body string }{
		{http.MethodPost, "", procJSON("ro", "other", 1)},
		{http.MethodPut, "/web/scale/3", ""},
		{http.MethodDelete, "/web", ""},
	} {
		a := bcsCall(t, c.method, base+c.path, c.body, ro)
		if a.status != http.StatusForbidden || a.Code != bcs.CodeScheduler || !strings.Contains(a.Message, "may not") {
			t.Errorf("read-only %s %s: HTTP %d %+v", c.method, c.path, a.status, a)
		}
	}
	a := bcsCall(t, http.MethodGet, base+"/web", "", "berth-acl-nobody.secret")
	if a.status != http.StatusUnauthorized {
		t.Errorf("unknown token: HTTP %d %+v", a.status, a)
	}
	p, err := testStore.Get(t.Context(), v4.KindProcess, "ro", "web")
	if err != nil || p.(*v4.Process).Spec.Instance != 1 {
		t.Errorf("the read-only token changed the process: %v %+v", err, p)
	}
}

// BCS's agent settings are the nodes' spec, found by IP: attributes replaced whole,
// enable and disable, NoSchedule taints; /cluster/resources sums capacity and use.
func TestBCSAgentSettings(t *testing.T) {
	url := newTestServer(t, Config{})
	for i, name := range []string{"node-1", "node-2"} {
		storetest.CreateNode(t, testStore, name, v4.NodeResources{CPU: 8, MemoryMB: 16384, DiskMB: 1000}, func(n *v4.Node) {
			n.Spec.IP = fmt.Sprintf("10.0.0.%d", i+1)
			n.Spec.Attributes = v4.NodeAttributes{Text: map[string]string{"old": "x"}}
			n.Spec.Taints = []v4.Taint{{Key: "k", Value: "v", Effect: v4.TaintNoSchedule}}
		})
	}
	putTaskGroup(t, "ag", "0.web.ag.c.1", "node-1", func(tg *v4.TaskGroup) {
		tg.Spec.Resources = v4.NodeResources{CPU: 0.5, MemoryMB: 128, DiskMB: 10}
	})
	base := url + bcs.DriverPrefix
	wantBCS(t, bcsCall(t, http.MethodPost, base+"/agentsettings", `[{"innerIP":"10.0.0.1","strings":{"rack":{"value":"r1"}},"scalars":{"ssd":{"value":2}}}]`, ""), 0)
	wantBCS(t, bcsCall(t, http.MethodPost, base+"/agentsettings/disable?ips=10.0.0.2", "", ""), 0)
	wantBCS(t, bcsCall(t, http.MethodPut, base+"/agentsettings/taint", `[{"innerIP":"10.0.0.1","noSchedule":{"dedicated":"db"}}]`, ""), 0)
	n1 := getNode(t, "node-1")
	if n1.Spec.Attributes.Text["rack"] != "r1" || n1.Spec.Attributes.Text["old"] != "" || n1.Spec.Attributes.Scalar["ssd"] != 2 ||
		len(n1.Spec.Taints) != 1 || n1.Spec.Taints[0] != (v4.Taint{Key: "dedicated", Value: "db", Effect: v4.TaintNoSchedule}) || n1.Spec.Disabled {
		t.Fatalf("node-1 after BCS's settings: %+v", n1.Spec)
	}
	if !getNode(t, "node-2").Spec.Disabled {
		t.Fatal("node-2 was not disabled")
	}
	a := bcsCall(t, http.MethodGet, base+"/agentsettings?ips=10.0.0.1", "", "")
	wantBCS(t, a, 0)
	var settings []struct {
		InnerIP    string
		Disabled   bool
		Strings    map[string]struct{ Value string }
		NoSchedule map[string]string
		Pods       []string
	}
	if err := json.Unmarshal(a.Data, &settings); err != nil || len(settings) != 1 || settings[0].Strings["rack"].Value != "r1" ||
		settings[0].NoSchedule["dedicated"] != "db" || len(settings[0].Pods) != 1 {
		t.Fatalf("settings: %v %s", err, a.Data)
	}
	wantBCS(t, bcsCall(t, http.MethodGet, base+"/agentsettings?ips=10.9.9.9", "", ""), bcs.CodeNotFound)
	wantBCS(t, bcsCall(t, http.MethodPost, base+"/agentsettings/enable?ips=10.0.0.2", "", ""), 0)
	if getNode(t, "node-2").Spec.Disabled {
		t.Fatal("node-2 was not enabled")
	}
	a = bcsCall(t, http.MethodGet, base+"/cluster/resources", "", "")
	wantBCS(t, a, 0)
	var res struct {
		CPUTotal float64 `json:"cputotal"`
		CPUUsed  float64 `json:"cpuused"`
		MemUsed  float64 `json:"memused"`
		Agents   []struct {
			IP      string
			CPUUsed float64 `json:"cpuused"`
		}
	}
	if err := json.Unmarshal(a.Data, &res); err != nil || res.CPUTotal != 16 || res.CPUUsed != 0.5 || res.MemUsed != 128 || len(res.Agents) != 2 || res.Agents[0].CPUUsed != 0.5 {
		t.Fatalf("cluster resources: %v %s", err, a.Data)
	}
	a = bcsCall(t, http.MethodPut, base+"/agentsettings/extendedresource", `{"InnerIP":"10.0.0.1","Name":"x","Value":1}`, "")
	if a.status != http.StatusNotFound || a.Code != bcs.CodeNotFound {
		t.Fatalf("extendedresource: %d %+v", a.status, a)
	}
}
