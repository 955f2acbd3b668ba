package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/bcs"
	"github.com/berthhq/berth/internal/compat/bcs/bcswire"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
)

// decodeBCS decodes an answer's data into BCS's type (bcswire.Decode).
func decodeBCS(t *testing.T, what string, a bcsAnswer, into any) {
	t.Helper()
	wantBCS(t, a, 0)
	if err := bcswire.Decode(a.Data, into); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, a.Data)
	}
}

const (
	secretValue = "TOPSECRET-5f1c9e"
	uriPassword = "URIPASS-77a1"
)

// shapesApp uses every task field BCS's Task carries that berth knows, an env from a
// secret among them.
const shapesApp = `{"apiVersion":"v4","kind":"application","metadata":{"name":"web","namespace":"sh","labels":{"app":"web"}},
 "restartPolicy":{"policy":"Always","interval":5,"backoff":10,"maxtimes":3},
 "killPolicy":{"gracePeriod":7},
 "spec":{"instance":1,"template":{"spec":{"networkMode":"BRIDGE","netLimit":{"egressLimit":100},"containers":[{"name":"main","image":"nginx:1","privileged":true,
   "command":"/bin/run","args":["-v"],"parameters":[{"key":"ulimit","value":"nofile=1024"}],
   "env":[{"name":"PLAIN","value":"p1"}],
   "ports":[{"name":"http","containerPort":80,"hostPort":0,"protocol":"HTTP"}],
   "volumes":[{"name":"d","volume":{"hostPath":"/data/x","mountPath":"/x","readOnly":true}}],
   "healthChecks":[{"type":"HTTP","intervalSeconds":30,"timeoutSeconds":5,"consecutiveFailures":3,"http":{"portName":"http","path":"/healthz","scheme":"http"}},
     {"type":"REMOTE_TCP","intervalSeconds":30,"timeoutSeconds":5,"tcp":{"portName":"http"}}],
   "secrets":[{"secretName":"pw","items":[{"type":"env","dataKey":"k","keyOrPath":"PASSWORD"}]}],
   "resources":{"requests":{"cpu":"0.5","memory":"128"},"limits":{"cpu":"1","memory":"256"}}}]}}}}`

// Every BCS read decodes into BCS's types, carries berth's values where BCS's types have
// a place for them, and shows no secret's value anywhere.
func TestBCSShapesDecode(t *testing.T) {
	url := newTestServer(t, Config{})
	storetest.CreateNode(t, testStore, "node-sh", v4.NodeResources{CPU: 8, MemoryMB: 16384, DiskMB: 1000}, func(n *v4.Node) {
		n.Spec.IP, n.Spec.Hostname = "10.0.9.1", "host-sh"
		n.Spec.Attributes = v4.NodeAttributes{Text: map[string]string{"rack": "r1"}, Scalar: map[string]float64{"ssd": 2},
			Set: map[string][]string{"zones": {"a", "b"}}}
	})
	secret := `{"apiVersion":"v4","kind":"secret","metadata":{"name":"pw","namespace":"sh"},"datas":{"k":{"content":"` +
		base64.StdEncoding.EncodeToString([]byte(secretValue)) + `"}}}`
	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", secret), http.StatusOK)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/sh/applications", shapesApp), http.StatusCreated)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/sh/deployments", deployJSON("sh", "web", "e")), http.StatusCreated)

	// The task group as the scheduler writes it: the application's template, placed.
	o, err := testStore.Get(context.Background(), v4.KindApplication, "sh", "web")
	if err != nil {
		t.Fatal(err)
	}
	app := o.(*v4.Application)
	putTaskGroup(t, "sh", "0.web.sh.c.1", "node-sh", func(tg *v4.TaskGroup) {
		tg.Spec.Owner = v4.OwnerRef{Kind: v4.KindApplication, Name: "web"}
		tg.Spec.Template = app.Spec.Template
		tg.Spec.Attributes = map[string]string{"rack": "r1", "hostname": "host-sh"}
		tg.Spec.Resources = v4.NodeResources{CPU: 0.51, MemoryMB: 192, DiskMB: 64}
		tg.Spec.Ports = []v4.AllocatedPort{{Name: "http", HostPort: 31001}}
		tg.Spec.KillGracePeriod = 7
		tg.Status = v4.TaskGroupStatus{Phase: v4.StatusRunning, HostIP: "10.0.9.1",
			Tasks:  []v4.TaskStatus{{Name: "main", Status: v4.StatusRunning, Info: v4.ContainerInfo{ConsecutiveFailureTimes: 2}}},
			Remote: &v4.RemoteHealth{Healthy: false, Message: "connection refused"}}
	})
	putTaskGroup(t, "sh", "0.pr.sh.c.1", "node-sh", func(tg *v4.TaskGroup) {
		tg.Spec.Owner = v4.OwnerRef{Kind: v4.KindProcess, Name: "pr"}
		tg.Spec.Template.Spec.Processes[0].URIs = []v4.URI{{Value: "http://repo/pkg.tgz", User: "u", Pwd: uriPassword, OutputDir: "/w"}}
	})
	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", procJSON("sh", "pr", 1)), http.StatusOK)
	d := getDeployment(t, "sh", "web")
	d.Status = v4.DeploymentStatus{Phase: v4.DeploymentUpdating, Revision: 2, Current: 1, Updated: time.Unix(1700000000, 0), LastStep: time.Unix(1700000000, 0)}
	if err := testStore.Update(context.Background(), d, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", controlledProcJSON("sh", "web-v2", 2)), http.StatusOK)

	base := url + bcs.GatewayPrefix + "/namespaces/sh"
	var bodies []string
	get := func(path string) bcsAnswer {
		a := bcsCall(t, http.MethodGet, base+path, "", "")
		bodies = append(bodies, string(a.Data))
		return a
	}

	var apps []bcswire.Application
	decodeBCS(t, "applications", get("/applications"), &apps)
	if len(apps) != 1 || apps[0].SubStatus != "Unknown" || apps[0].DefineInstances != 1 || apps[0].ClusterId != "BCS-MESOS-10001" {
		t.Errorf("applications: %+v", apps)
	}
	var one bcswire.Application
	decodeBCS(t, "application", get("/applications/web"), &one)

	var tgs []bcswire.TaskGroup
	decodeBCS(t, "task groups", get("/applications/web/taskgroups"), &tgs)
	if len(tgs) != 1 || len(tgs[0].Taskgroup) != 1 {
		t.Fatalf("task groups: %+v", tgs)
	}
	tg := tgs[0]
	if tg.AgentID != "node-sh" || tg.InstanceID != 0 || tg.KillPolicy == nil || tg.KillPolicy.GracePeriod != 7 {
		t.Errorf("task group: AgentID %q, KillPolicy %+v", tg.AgentID, tg.KillPolicy)
	}
	if rp := tg.RestartPolicy; rp == nil || rp.Policy != "Always" || rp.Interval != 5 || rp.Backoff != 10 || rp.MaxTimes != 3 {
		t.Errorf("restart policy: %+v", tg.RestartPolicy)
	}
	if r := tg.LaunchResource; r == nil || r.Cpus != 0.51 || r.Mem != 192 || r.Disk != 64 || tg.CurrResource == nil {
		t.Errorf("resources: %+v %+v", tg.LaunchResource, tg.CurrResource)
	}
	attrs := map[string]string{}
	for _, at := range tg.Attributes {
		if at.Name == nil || at.Type == nil || *at.Type != 3 || at.Text == nil || at.Text.Value == nil {
			t.Fatalf("attribute not Mesos's TEXT: %+v", at)
		}
		attrs[*at.Name] = *at.Text.Value
	}
	if len(attrs) != 2 || attrs["rack"] != "r1" || attrs["hostname"] != "host-sh" {
		t.Errorf("attributes: %v", attrs)
	}
	task := tg.Taskgroup[0]
	if task.Name != "main" || task.AgentId != "node-sh" || !task.Privileged || task.Network != "BRIDGE" || task.Command != "/bin/run" ||
		len(task.Arguments) != 1 || task.ConsecutiveFailureTimes != 2 || task.KillPolicy == nil {
		t.Errorf("task: %+v", task)
	}
	if len(task.Parameters) != 1 || task.Parameters[0].Key != "ulimit" || task.Parameters[0].Value != "nofile=1024" {
		t.Errorf("parameters: %+v", task.Parameters)
	}
	if len(task.Volumes) != 1 || *task.Volumes[0] != (struct{ ContainerPath, HostPath, Mode string }{"/x", "/data/x", "RO"}) {
		t.Errorf("volumes: %+v", task.Volumes)
	}
	if len(task.PortMappings) != 1 || task.PortMappings[0].HostPort != 31001 || task.PortMappings[0].ContainerPort != 80 {
		t.Errorf("ports: %+v", task.PortMappings)
	}
	if len(task.HealthCheckStatus) != 1 || task.HealthCheckStatus[0].Type != "REMOTE_TCP" || task.HealthCheckStatus[0].Result ||
		task.HealthCheckStatus[0].Message != "connection refused" {
		t.Errorf("remote check status: %+v", task.HealthCheckStatus)
	}
	if len(task.HealthChecks) != 2 || task.HealthChecks[0].Type != "HTTP" || task.HealthChecks[0].ConsecutiveFailures != 3 ||
		task.HealthChecks[0].HTTP == nil || task.HealthChecks[0].HTTP.Path != "/healthz" {
		t.Errorf("health checks: %+v", task.HealthChecks)
	}
	if task.Env["PLAIN"] != "p1" || task.Env["PASSWORD"] != "secret::pw||k" {
		t.Errorf("env: %v", task.Env)
	}
	if dc := task.DataClass; dc == nil || dc.Resources == nil || dc.Resources.Cpus != 0.5 || dc.Resources.Mem != 128 ||
		dc.LimitResources == nil || dc.LimitResources.Cpus != 1 || dc.LimitResources.Mem != 256 {
		t.Errorf("data class: %+v", task.DataClass)
	}

	if task.NetLimit == nil || task.NetLimit.EgressLimit != 100 || task.DataClass.NetLimit == nil {
		t.Errorf("net limit: %+v %+v", task.NetLimit, task.DataClass)
	}
	var ptgs []bcswire.TaskGroup
	decodeBCS(t, "process task groups", get("/processes/pr/taskgroups"), &ptgs)
	if len(ptgs) != 1 || len(ptgs[0].Taskgroup) != 1 || ptgs[0].Taskgroup[0].DataClass == nil || ptgs[0].Taskgroup[0].DataClass.ProcInfo == nil {
		t.Fatalf("process task groups: %+v", ptgs)
	}
	if pi := ptgs[0].Taskgroup[0].DataClass.ProcInfo; pi.ProcName != "web" || pi.StartCmd != "./web" || len(pi.Uris) != 1 ||
		pi.Uris[0].Value != "http://repo/pkg.tgz" || pi.Uris[0].User != "u" || pi.Uris[0].Pwd != "" {
		t.Errorf("process definition: %+v %+v", pi, pi.Uris)
	}

	var ids []string
	wantBCS(t, get("/applications/web/versions"), 0)
	if err := json.Unmarshal([]byte(bodies[len(bodies)-1]), &ids); err != nil || len(ids) != 1 {
		t.Fatalf("versions: %v %s", err, bodies[len(bodies)-1])
	}
	var version bcswire.Version
	decodeBCS(t, "version", get("/applications/web/versions/"+ids[0]), &version)
	if version.RestartPolicy == nil || version.RestartPolicy.Policy != "Always" || version.KillPolicy == nil ||
		version.KillPolicy.GracePeriod != 7 || version.Labels["app"] != "web" || version.Instances != 1 || version.RawJson == nil {
		t.Errorf("version: %+v", version)
	}

	var deps []bcswire.Deployment
	decodeBCS(t, "deployments", get("/deployments"), &deps)
	var dep bcswire.Deployment
	decodeBCS(t, "deployment", get("/deployments/web"), &dep)
	if dep.Status != "Update" || !dep.IsInRolling || dep.CurrRollingOp != "START" || dep.CheckTime != 1700000000 ||
		dep.ApplicationExt == nil || dep.ApplicationExt.ApplicationName != "web-v2" || dep.ApplicationExt.CurrentRollingInstances != 1 {
		t.Errorf("deployment: %+v ext %+v", dep, dep.ApplicationExt)
	}

	var res bcswire.ClusterResource
	a := bcsCall(t, http.MethodGet, url+bcs.GatewayPrefix+"/cluster/resources", "", "")
	bodies = append(bodies, string(a.Data))
	decodeBCS(t, "cluster resources", a, &res)
	if len(res.Agents) != 1 || len(res.Agents[0].HostAttributes) != 3 || len(res.Agents[0].Attributes) != 3 {
		t.Fatalf("cluster resources: %+v", res)
	}
	for _, at := range res.Agents[0].HostAttributes {
		if at.Name == "rack" && (at.Type != 103 || at.Text == nil || at.Text.Value != "r1") {
			t.Errorf("host attribute: %+v", at)
		}
	}

	wantBCS(t, get("/daemonset"), 0)
	var settings []bcswire.AgentSetting
	a = bcsCall(t, http.MethodGet, url+bcs.GatewayPrefix+"/agentsettings?ips=10.0.9.1", "", "")
	bodies = append(bodies, string(a.Data))
	decodeBCS(t, "agent settings", a, &settings)
	if len(settings) != 1 || settings[0].InnerIP != "10.0.9.1" || settings[0].AttrStrings["rack"].Value != "r1" || settings[0].AttrScalars["ssd"].Value != 2 {
		t.Errorf("agent settings: %+v", settings)
	}

	b64 := base64.StdEncoding.EncodeToString([]byte(secretValue))
	for _, body := range bodies {
		if strings.Contains(body, secretValue) || strings.Contains(body, b64) || strings.Contains(body, uriPassword) {
			t.Errorf("a secret's value in an answer: %s", body)
		}
	}
}
