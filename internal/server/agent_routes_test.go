package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/pki"
	"github.com/berthhq/berth/internal/store/storetest"
)

// agentRoutes are the routes only a node's agent may call.
var agentRoutes = []struct{ method, path string }{
	{http.MethodPost, "/v1/agent/certificate/renew"},
	{http.MethodPost, "/v1/agent/register"},
	{http.MethodPut, "/v1/agent/nodes/n1/heartbeat"},
	{http.MethodPost, "/v1/agent/nodes/n1/heartbeats"},
	{http.MethodGet, "/v1/agent/nodes/n1/taskgroups"},
	{http.MethodGet, "/v1/agent/nodes/n1/taskgroups?watch=true"},
	{http.MethodPost, "/v1/agent/nodes/n1/report"},
	{http.MethodPost, "/v1/agent/nodes/n1/statuses"},
	{http.MethodPut, "/v1/agent/nodes/n1/busyports"},
	{http.MethodPut, "/v1/agent/nodes/n1/revocable"},
	{http.MethodPut, "/v1/agent/nodes/n1/csiplugins"},
	{http.MethodPost, "/v1/agent/volumes/claim"},
	{http.MethodPost, "/v1/agent/volumes/release"},
	{http.MethodPut, "/v1/agent/taskgroups/ns/tg/status"},
	{http.MethodGet, "/v1/agent/configmaps/ns/cm"},
	{http.MethodGet, "/v1/agent/secrets/ns/s"},
}

// Agents authenticate with their node's certificate: no certificate, or a join token
// alone, gets 401 on every agent route; a certificate of another CA is refused in the
// TLS handshake.
func TestAgentRoutesAuth(t *testing.T) {
	url := newTestServer(t, Config{})
	token := storetest.JoinToken(t, testStore, v4.JoinRoleServer, time.Time{})
	for _, rt := range agentRoutes {
		for _, tok := range []string{"", token.String()} {
			r := callAs(t, "", rt.method, url+rt.path, "{}", tok)
			wantStatus(t, r, http.StatusUnauthorized)
			if !strings.Contains(decodeError(t, r).Message, "client certificate") {
				t.Errorf("%s %s: 401 does not say what is missing: %s", rt.method, rt.path, r.body)
			}
		}
	}
	other, err := pki.NewCA("another CA", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	kp, err := other.Issue(pki.Request{CommonName: "n1", Organization: pki.OrgNodes, Client: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	hc := client.HTTPClient(testCA(t).Pool(), func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil })
	if resp, err := hc.Get(url + "/v1/agent/nodes/n1/taskgroups"); err == nil {
		resp.Body.Close()
		t.Fatalf("a certificate of another CA got %d", resp.StatusCode)
	}
}

// A node's certificate is good for that node only: node n2's agent cannot register,
// heartbeat, list, watch, report or set status as n1, nor read what n1's task groups use.
func TestAgentCannotActForAnotherNode(t *testing.T) {
	url := newTestServer(t, Config{})
	wantStatus(t, agentCall(t, http.MethodPost, url+"/v1/agent/register", nodeJSON("n1", "")), http.StatusCreated)
	uses := func(tg *v4.TaskGroup) {
		tg.Spec.Template.Spec.Processes[0].Secrets = []v4.SecretRef{{SecretName: "pw", Items: []v4.SecretItem{{Type: "env", DataKey: "k", KeyOrPath: "PW"}}}}
		tg.Spec.Template.Spec.Processes[0].ConfigMaps = []v4.ConfigMapRef{{Name: "cfg"}}
	}
	putTaskGroup(t, "ns", "0.web.ns.c.1", "n1", uses)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/ns/configmaps", cmJSON("ns", "cfg", "aGk=")), http.StatusCreated)
	secret := `{"apiVersion":"v4","kind":"secret","metadata":{"name":"pw","namespace":"ns"},"datas":{"k":{"content":"c2VjcmV0"}}}`
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/ns/secrets", secret), http.StatusCreated)
	report, _ := json.Marshal(v4.AgentReport{})
	for _, c := range []struct{ method, path, body, want string }{
		{http.MethodPost, "/v1/agent/register", nodeJSON("n1", ""), "cannot register node \"n1\""},
		{http.MethodPut, "/v1/agent/nodes/n1/heartbeat", `{"agentAddress":"127.0.0.1:9"}`, "cannot act for node n1"},
		{http.MethodPost, "/v1/agent/nodes/n1/heartbeats", `{"agentAddress":"127.0.0.1:9"}`, "cannot act for node n1"},
		{http.MethodGet, "/v1/agent/nodes/n1/taskgroups", "", "cannot act for node n1"},
		{http.MethodGet, "/v1/agent/nodes/n1/taskgroups?watch=true", "", "cannot act for node n1"},
		{http.MethodPost, "/v1/agent/nodes/n1/report", string(report), "cannot act for node n1"},
		{http.MethodPost, "/v1/agent/nodes/n1/statuses", `{"taskGroups":[{"namespace":"ns","name":"0.web.ns.c.1","status":{"phase":"Failed"}}]}`, "cannot act for node n1"},
		{http.MethodPut, "/v1/agent/taskgroups/ns/0.web.ns.c.1/status", statusJSON(t, v4.StatusFailed, 1), "certificate is for node n2"},
		{http.MethodGet, "/v1/agent/secrets/ns/pw", "", "no task group of node n2"},
		{http.MethodGet, "/v1/agent/secrets/ns/pw?node=n1", "", "not n1"},
		{http.MethodGet, "/v1/agent/configmaps/ns/cfg", "", "no task group of node n2"},
	} {
		r := callAs(t, "n2", c.method, url+c.path, c.body, "")
		wantStatus(t, r, http.StatusForbidden)
		if msg := decodeError(t, r).Message; !strings.Contains(msg, c.want) {
			t.Errorf("%s %s: %q, want %q", c.method, c.path, msg, c.want)
		}
	}
	if tg := getTaskGroup(t, "ns", "0.web.ns.c.1"); tg.Status.Phase != "" {
		t.Fatalf("n2 set the status of n1's task group: %+v", tg.Status)
	}
	// n1 itself reads both.
	wantStatus(t, agentCall(t, http.MethodGet, url+"/v1/agent/secrets/ns/pw", ""), http.StatusOK)
	wantStatus(t, agentCall(t, http.MethodGet, url+"/v1/agent/configmaps/ns/cfg", ""), http.StatusOK)
}

func TestAgentRegisterKeepsOperatorFields(t *testing.T) {
	url := newTestServer(t, Config{})
	reg := `{"metadata":{"name":"n1","labels":{"agent":"yes","old":"1"}},
		"spec":{"ip":"10.0.0.1","capacity":{"cpu":4,"memoryMB":8000,"diskMB":1000},
			"attributes":{"text":{"rack":"r1"}}},
		"status":{"agentVersion":"v1","agentAddress":"10.0.0.1:7471"}}`
	r := agentCall(t, http.MethodPost, url+"/v1/agent/register", reg)
	wantStatus(t, r, http.StatusCreated)
	n := decodeNodeBody(t, r.body)
	if n.Status.Phase != v4.NodeReady || n.Status.LastHeartbeat.IsZero() || n.Status.AgentAddress != "10.0.0.1:7471" ||
		n.Spec.Allocatable.CPU != 4 || n.Metadata.Labels["agent"] != "yes" {
		t.Fatalf("registered node: %s", r.body)
	}
	// An operator taints, disables, labels and sets an attribute.
	patch := `{"metadata":{"labels":{"team":"db"}},"spec":{"disabled":true,
		"taints":[{"key":"dedicated","value":"db","effect":"NoSchedule"}],"attributes":{"text":{"zone":"z1"}}}}`
	wantStatus(t, call(t, http.MethodPatch, url+"/v1/nodes/n1", patch), http.StatusOK)

	// The agent restarts with more cpu, without the "old" label, with a new attribute.
	reg2 := strings.NewReplacer(`"cpu":4`, `"cpu":8`, `,"old":"1"`, ``, `"rack":"r1"`, `"rack":"r2"`).Replace(reg)
	r = agentCall(t, http.MethodPost, url+"/v1/agent/register", reg2)
	wantStatus(t, r, http.StatusOK)
	n = decodeNodeBody(t, r.body)
	if n.Spec.Capacity.CPU != 8 || n.Spec.Allocatable.CPU != 8 {
		t.Errorf("agent-owned resources not updated: %+v", n.Spec.Capacity)
	}
	if !n.Spec.Disabled || len(n.Spec.Taints) != 1 || n.Metadata.Labels["team"] != "db" || n.Spec.Attributes.Text["zone"] != "z1" {
		t.Errorf("operator fields lost: %s", r.body)
	}
	if _, ok := n.Metadata.Labels["old"]; ok || n.Metadata.Labels["agent"] != "yes" || n.Spec.Attributes.Text["rack"] != "r2" {
		t.Errorf("agent labels/attributes not replaced: %s", r.body)
	}
	// An operator quarantines the node; its agent cannot relabel itself back, neither by
	// a label the operator set nor by one the agent set and the operator changed.
	wantStatus(t, call(t, http.MethodPatch, url+"/v1/nodes/n1", `{"metadata":{"labels":{"trust":"quarantine","agent":"no"}}}`), http.StatusOK)
	reg3 := strings.Replace(reg2, `"agent":"yes"`, `"agent":"yes","trust":"prod-db"`, 1)
	r = agentCall(t, http.MethodPost, url+"/v1/agent/register", reg3)
	wantStatus(t, r, http.StatusOK)
	n = decodeNodeBody(t, r.body)
	if n.Metadata.Labels["trust"] != "quarantine" || n.Metadata.Labels["agent"] != "no" {
		t.Errorf("the agent overwrote the operator's labels: %v", n.Metadata.Labels)
	}
	// Bad bodies: 422 with details, like POST /v1/nodes.
	r = agentCall(t, http.MethodPost, url+"/v1/agent/register", `{"metadata":{"name":"n1"},"spec":{"bogus":1}}`)
	wantStatus(t, r, http.StatusUnprocessableEntity)
}

func TestAgentHeartbeat(t *testing.T) {
	url := newTestServer(t, Config{})
	wantStatus(t, agentCall(t, http.MethodPut, url+"/v1/agent/nodes/n1/heartbeat", `{}`), http.StatusNotFound)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/nodes", strings.Replace(nodeJSON("n1", ""), `"Ready"`, `"NotReady"`, 1)), http.StatusCreated)
	before := time.Now().UTC().Add(-time.Second)
	r := agentCall(t, http.MethodPut, url+"/v1/agent/nodes/n1/heartbeat", `{"agentVersion":"v9","agentAddress":"127.0.0.1:9"}`)
	if r.code != http.StatusNoContent {
		t.Fatalf("heartbeat: %d %s", r.code, r.body)
	}
	n := decodeNodeBody(t, call(t, http.MethodGet, url+"/v1/nodes/n1", "").body)
	if n.Status.Phase != v4.NodeReady || n.Status.LastHeartbeat.Before(before) || n.Status.AgentVersion != "v9" || n.Status.AgentAddress != "127.0.0.1:9" {
		t.Fatalf("after heartbeat: %+v", n.Status)
	}
	// Beats that change nothing renew the node's lease and write nothing: etcd's revision
	// stays, and the node read through the API shows the latest beat.
	start := revision(t, context.Background())
	for range 10 {
		wantStatus(t, agentCall(t, http.MethodPut, url+"/v1/agent/nodes/n1/heartbeat", `{"agentVersion":"v9","agentAddress":"127.0.0.1:9"}`), http.StatusNoContent)
	}
	if end := revision(t, context.Background()); end != start {
		t.Errorf("10 unchanged heartbeats moved etcd's revision from %d to %d", start, end)
	}
	// A new agent address is written at once.
	wantStatus(t, agentCall(t, http.MethodPut, url+"/v1/agent/nodes/n1/heartbeat", `{"agentAddress":"127.0.0.1:10"}`), http.StatusNoContent)
	if n := decodeNodeBody(t, call(t, http.MethodGet, url+"/v1/nodes/n1", "").body); n.Status.AgentAddress != "127.0.0.1:10" || n.Status.AgentVersion != "v9" {
		t.Errorf("after a new address: %+v", n.Status)
	}
	wantStatus(t, agentCall(t, http.MethodPut, url+"/v1/agent/nodes/n1/heartbeat", `{"nope":1}`), http.StatusBadRequest)
}

func TestAgentTaskGroupListAndWatch(t *testing.T) {
	url := newTestServer(t, Config{})
	putTaskGroup(t, "ns-a", "0.web.ns-a.c.1", "n1", nil)
	putTaskGroup(t, "ns-b", "0.api.ns-b.c.1", "n1", nil)
	putTaskGroup(t, "ns-a", "1.web.ns-a.c.1", "n2", nil)

	r := agentCall(t, http.MethodGet, url+"/v1/agent/nodes/n1/taskgroups", "")
	wantStatus(t, r, http.StatusOK)
	var list struct {
		ResourceVersion string         `json:"resourceVersion"`
		Items           []v4.TaskGroup `json:"items"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 || list.ResourceVersion == "" {
		t.Fatalf("list of n1: %s", r.body)
	}

	w := openWatch(t, url+"/v1/agent/nodes/n1/taskgroups?watch=true")
	got := map[string]string{}
	for range 2 {
		typ, name := w.next()
		got[name] = typ
	}
	if got["0.web.ns-a.c.1"] != "ADDED" || got["0.api.ns-b.c.1"] != "ADDED" {
		t.Fatalf("initial events: %v", got)
	}
	putTaskGroup(t, "ns-a", "1.web.ns-a.c.1", "n2", func(tg *v4.TaskGroup) { tg.Spec.Desired = v4.DesiredStopped }) // other node: not seen
	putTaskGroup(t, "ns-a", "0.web.ns-a.c.1", "n1", func(tg *v4.TaskGroup) { tg.Spec.Desired = v4.DesiredStopped })
	if typ, name := w.next(); typ != "MODIFIED" || name != "0.web.ns-a.c.1" {
		t.Fatalf("got %s %s, want MODIFIED 0.web", typ, name)
	}
	putTaskGroup(t, "ns-a", "2.web.ns-a.c.1", "n1", nil)
	if typ, name := w.next(); typ != "ADDED" || name != "2.web.ns-a.c.1" {
		t.Fatalf("got %s %s, want ADDED 2.web", typ, name)
	}
	putTaskGroup(t, "ns-b", "0.api.ns-b.c.1", "n2", nil) // moved away
	if typ, name := w.next(); typ != "DELETED" || name != "0.api.ns-b.c.1" {
		t.Fatalf("got %s %s, want DELETED for a move", typ, name)
	}
	if _, err := testStore.Delete(t.Context(), v4.KindTaskGroup, "ns-a", "2.web.ns-a.c.1", ""); err != nil {
		t.Fatal(err)
	}
	if typ, name := w.next(); typ != "DELETED" || name != "2.web.ns-a.c.1" {
		t.Fatalf("got %s %s, want DELETED 2.web", typ, name)
	}

	// Resuming from the list's revision replays only this node's changes.
	w2 := openWatch(t, url+"/v1/agent/nodes/n1/taskgroups?watch=true&resourceVersion="+list.ResourceVersion)
	if typ, name := w2.next(); typ != "MODIFIED" || name != "0.web.ns-a.c.1" {
		t.Fatalf("resumed: got %s %s", typ, name)
	}
}

func TestAgentStatus(t *testing.T) {
	url := newTestServer(t, Config{})
	put := func(name, body string) response {
		return agentCall(t, http.MethodPut, url+"/v1/agent/taskgroups/ns/"+name+"/status", body)
	}
	wantStatus(t, put("0.web.ns.c.1", statusJSON(t, v4.StatusRunning, 10)), http.StatusNotFound)
	orig := putTaskGroup(t, "ns", "0.web.ns.c.1", "n1", nil)
	r := put("0.web.ns.c.1", statusJSON(t, v4.StatusRunning, 10))
	wantStatus(t, r, http.StatusOK)
	tg := getTaskGroup(t, "ns", "0.web.ns.c.1")
	if tg.Status.Phase != v4.StatusRunning || tg.Status.Tasks[0].Info.Pid != 10 || tg.Spec.Node != "n1" ||
		tg.Spec.Template.Spec.Processes[0].StartCmd != orig.Spec.Template.Spec.Processes[0].StartCmd {
		t.Fatalf("after status: %+v", tg)
	}
	wantStatus(t, put("0.web.ns.c.1", `{"phase":"Running","bogus":1}`), http.StatusBadRequest)

	// Terminal is final (BCS): a late Running of the same run is ignored...
	wantStatus(t, put("0.web.ns.c.1", statusJSON(t, v4.StatusFailed, 10)), http.StatusOK)
	wantStatus(t, put("0.web.ns.c.1", statusJSON(t, v4.StatusRunning, 10)), http.StatusOK)
	wantStatus(t, put("0.web.ns.c.1", statusJSON(t, v4.StatusFinish, 10)), http.StatusOK)
	if tg := getTaskGroup(t, "ns", "0.web.ns.c.1"); tg.Status.Phase != v4.StatusFailed {
		t.Fatalf("terminal status overwritten: %s", tg.Status.Phase)
	}
	// ...and so is one without PIDs; a new run (other PIDs) is taken.
	wantStatus(t, put("0.web.ns.c.1", statusJSON(t, v4.StatusStaging)), http.StatusOK)
	if tg := getTaskGroup(t, "ns", "0.web.ns.c.1"); tg.Status.Phase != v4.StatusFailed {
		t.Fatalf("status without PIDs after terminal taken: %s", tg.Status.Phase)
	}
	wantStatus(t, put("0.web.ns.c.1", statusJSON(t, v4.StatusRunning, 11)), http.StatusOK)
	if tg := getTaskGroup(t, "ns", "0.web.ns.c.1"); tg.Status.Phase != v4.StatusRunning || tg.Status.Tasks[0].Info.Pid != 11 {
		t.Fatalf("new run ignored: %+v", tg.Status)
	}
	// Phase changes are recorded as events.
	storetest.FlushEvents(t, testStore)
	r = call(t, http.MethodGet, url+"/v1/events?kind=taskgroup", "")
	if !strings.Contains(string(r.body), "is Failed on node n1") {
		t.Fatalf("no phase event: %s", r.body)
	}
}

func TestAgentReport(t *testing.T) {
	url := newTestServer(t, Config{})
	putTaskGroup(t, "ns", "0.web.ns.c.1", "n1", nil)
	putTaskGroup(t, "ns", "1.web.ns.c.1", "n2", nil)
	rep := v4.AgentReport{TaskGroups: []v4.TaskGroupReport{
		{Namespace: "ns", Name: "0.web.ns.c.1", Status: v4.TaskGroupStatus{Phase: v4.StatusRunning}},
		{Namespace: "ns", Name: "1.web.ns.c.1", Status: v4.TaskGroupStatus{Phase: v4.StatusRunning}},
		{Namespace: "ns", Name: "9.gone.ns.c.1", Status: v4.TaskGroupStatus{Phase: v4.StatusRunning}},
	}}
	body, _ := json.Marshal(rep)
	r := agentCall(t, http.MethodPost, url+"/v1/agent/nodes/n1/report", string(body))
	wantStatus(t, r, http.StatusOK)
	var res v4.AgentReportResult
	if err := json.Unmarshal(r.body, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Unknown) != 2 || res.Unknown[0].Name != "1.web.ns.c.1" || res.Unknown[1].Name != "9.gone.ns.c.1" {
		t.Fatalf("unknown: %s", r.body)
	}
	if getTaskGroup(t, "ns", "0.web.ns.c.1").Status.Phase != v4.StatusRunning {
		t.Fatal("report status not written")
	}
	if getTaskGroup(t, "ns", "1.web.ns.c.1").Status.Phase != "" {
		t.Fatal("status of another node's task group written")
	}
	r = agentCall(t, http.MethodPost, url+"/v1/agent/nodes/n1/report", `{"taskGroups":[]}`)
	wantStatus(t, r, http.StatusOK)
	if strings.TrimSpace(string(r.body)) != `{"unknown":[]}` {
		t.Fatalf("empty report: %s", r.body)
	}
	// One task group repeated is refused whole: nothing of the report is written.
	twice := `{"taskGroups":[{"namespace":"ns","name":"0.web.ns.c.1","status":{"phase":"Failed"}},` +
		`{"namespace":"ns","name":"0.web.ns.c.1","status":{"phase":"Failed"}}]}`
	r = agentCall(t, http.MethodPost, url+"/v1/agent/nodes/n1/report", twice)
	wantStatus(t, r, http.StatusBadRequest)
	if !strings.Contains(string(r.body), "taskGroups[1]: ns/0.web.ns.c.1 is reported twice") {
		t.Fatalf("repeated task group: %s", r.body)
	}
	if getTaskGroup(t, "ns", "0.web.ns.c.1").Status.Phase != v4.StatusRunning {
		t.Fatal("a refused report wrote a status")
	}
}

func TestAgentConfigMapsAndSecrets(t *testing.T) {
	url := newTestServer(t, Config{})
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/ns/configmaps", cmJSON("ns", "cfg", "aGk=")), http.StatusCreated)
	secret := `{"apiVersion":"v4","kind":"secret","metadata":{"name":"pw","namespace":"ns"},"datas":{"k":{"content":"c2VjcmV0"}}}`
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/ns/secrets", secret), http.StatusCreated)

	cm := func(name string) response {
		return agentCall(t, http.MethodGet, url+"/v1/agent/configmaps/ns/"+name, "")
	}
	wantStatus(t, cm("cfg"), http.StatusForbidden) // nothing on n1 uses it
	putTaskGroup(t, "ns", "9.web.ns.c.1", "n1", func(tg *v4.TaskGroup) {
		tg.Spec.Template.Spec.Processes[0].ConfigMaps = []v4.ConfigMapRef{{Name: "cfg"}, {Name: "nope"}}
	})
	r := cm("cfg")
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), "aGk=") {
		t.Fatalf("configmap: %s", r.body)
	}
	wantStatus(t, cm("nope"), http.StatusNotFound)

	get := func(q string) response { return agentCall(t, http.MethodGet, url+"/v1/agent/secrets/ns/pw"+q, "") }
	wantStatus(t, get(""), http.StatusForbidden) // nothing on n1 uses it
	uses := func(tg *v4.TaskGroup) {
		tg.Spec.Template.Spec.Processes[0].Secrets = []v4.SecretRef{{SecretName: "pw", Items: []v4.SecretItem{{Type: "env", DataKey: "k", KeyOrPath: "PW"}}}}
	}
	putTaskGroup(t, "ns", "0.web.ns.c.1", "n2", uses)
	putTaskGroup(t, "ns", "1.web.ns.c.1", "n1", nil)
	wantStatus(t, get("?node=n1"), http.StatusForbidden) // used on n2 only
	putTaskGroup(t, "ns", "2.web.ns.c.1", "n1", uses)
	wantStatus(t, get("?node=n1&taskgroup=1.web.ns.c.1"), http.StatusForbidden) // that one does not use it
	r = get("?node=n1&taskgroup=2.web.ns.c.1")
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), "c2VjcmV0") {
		t.Fatalf("secret: %s", r.body)
	}
	wantStatus(t, get("?node=n1"), http.StatusOK)
	// A missing secret is a 403 for an unrelated node (no probing), 404 for a user.
	wantStatus(t, agentCall(t, http.MethodGet, url+"/v1/agent/secrets/ns/other?node=n1", ""), http.StatusForbidden)
}

// The remote health is the server's: an agent's status write keeps the stored one and
// cannot set its own, alone or batched.
func TestAgentStatusKeepsRemoteHealth(t *testing.T) {
	url := newTestServer(t, Config{})
	putTaskGroup(t, "ns", "0.rh.ns.c.1", "n1", func(tg *v4.TaskGroup) {
		tg.Status = v4.TaskGroupStatus{Phase: v4.StatusRunning, Remote: &v4.RemoteHealth{Healthy: false, Message: "tcp 10.0.0.1:80: refused"}}
	})
	for pid, body := range map[int]string{
		10: statusJSON(t, v4.StatusRunning, 10),
		11: strings.Replace(statusJSON(t, v4.StatusRunning, 11), `"phase"`, `"remote":{"healthy":true,"since":"2026-01-01T00:00:00Z"},"phase"`, 1),
	} {
		wantStatus(t, agentCall(t, http.MethodPut, url+"/v1/agent/taskgroups/ns/0.rh.ns.c.1/status", body), http.StatusOK)
		tg := getTaskGroup(t, "ns", "0.rh.ns.c.1")
		if tg.Status.Tasks[0].Info.Pid != pid || tg.Status.Remote == nil || tg.Status.Remote.Healthy || tg.Status.Remote.Message != "tcp 10.0.0.1:80: refused" {
			t.Fatalf("after a report of pid %d: %+v", pid, tg.Status)
		}
	}
}
