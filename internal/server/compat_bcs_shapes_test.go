package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/bcs"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
)

// The wire* types reproduce BCS's Go types as its clients decode the scheduler's answers:
// the same keys (Go's field names where BCS had no tags), the same Go types (unsigned
// counters, int32 ports, a Mesos attribute's pointers and enum number), the same nesting.
// Decoding an answer into them fails on any value of another JSON type, as a program
// built on BCS's types would.

type wireMeta struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace"`
	CreationTimestamp time.Time         `json:"creationTimestamp"`
	Labels            map[string]string `json:"labels"`
	Annotations       map[string]string `json:"annotations"`
	ClusterName       string            `json:"clusterName"`
}

type wireApplication struct {
	Kind, ID, Name                               string
	ObjectMeta                                   wireMeta
	DefineInstances, Instances, RunningInstances uint64
	RunAs, ClusterId, Status, SubStatus          string
	LastStatus                                   string
	Created, UpdateTime                          int64
	Mode                                         string
	LastUpdateTime                               int64
	Message                                      string
	Pods                                         []*struct {
		Name string `json:"name"`
	}
}

type wireKillPolicy struct {
	GracePeriod int64 `json:"gracePeriod"`
}

type wireRestartPolicy struct {
	Policy         string `json:"policy"`
	Interval       int    `json:"interval"`
	Backoff        int    `json:"backoff"`
	MaxTimes       int    `json:"maxtimes"`
	HostRetainTime int64  `json:"hostRetainTime"`
}

// wireMesosAttribute is Mesos's protobuf Attribute as its Go type decodes JSON.
type wireMesosAttribute struct {
	Name   *string `json:"name,omitempty"`
	Type   *int32  `json:"type,omitempty"`
	Scalar *struct {
		Value *float64 `json:"value,omitempty"`
	} `json:"scalar,omitempty"`
	Ranges *struct {
		Range []*struct {
			Begin *uint64 `json:"begin,omitempty"`
			End   *uint64 `json:"end,omitempty"`
		} `json:"range,omitempty"`
	} `json:"ranges,omitempty"`
	Set *struct {
		Item []string `json:"item,omitempty"`
	} `json:"set,omitempty"`
	Text *struct {
		Value *string `json:"value,omitempty"`
	} `json:"text,omitempty"`
}

type wireResource struct{ Cpus, Mem, Disk float64 }

type wireTaskGroup struct {
	Kind, ID, Name, AppID, RunAs string
	ObjectMeta                   wireMeta
	AgentID, ExecutorID, Status  string
	LastStatus                   string
	InstanceID                   uint64
	Taskgroup                    []*wireTask
	KillPolicy                   *wireKillPolicy
	RestartPolicy                *wireRestartPolicy
	VersionName                  string
	LastUpdateTime               int64
	Attributes                   []*wireMesosAttribute
	StartTime, UpdateTime        int64
	ReschededTimes               int
	LastReschedTime              int64
	HostName, Message            string
	LaunchResource, CurrResource *wireResource
	BcsEventMsg                  *json.RawMessage
}

type wireHealthCheck struct {
	Type                string `json:"type"`
	DelaySeconds        int    `json:"delaySeconds"`
	GracePeriodSeconds  int    `json:"gracePeriodSeconds"`
	IntervalSeconds     int    `json:"intervalSeconds"`
	TimeoutSeconds      int    `json:"timeoutSeconds"`
	ConsecutiveFailures uint32 `json:"consecutiveFailures"`
	Command             *struct {
		Value string `json:"value"`
	} `json:"command"`
	HTTP *struct {
		Port     int32             `json:"port"`
		PortName string            `json:"portName"`
		Scheme   string            `json:"scheme"`
		Path     string            `json:"path"`
		Headers  map[string]string `json:"headers"`
	} `json:"http"`
	TCP *struct {
		Port     int32  `json:"port"`
		PortName string `json:"portName"`
	} `json:"tcp"`
}

type wireTask struct {
	Kind, ID, Name, Hostame, Command string
	Arguments                        []string
	Image, ImagePullUser             string
	ImagePullPasswd                  string
	Network, NetworkType             string
	PortMappings                     []*struct {
		ContainerPort, HostPort int32
		Name, Protocol          string
	}
	Privileged     bool
	Parameters     []*struct{ Key, Value string }
	ForcePullImage bool
	Volumes        []*struct{ ContainerPath, HostPath, Mode string }
	Env            map[string]string
	Labels         map[string]string
	DataClass      *struct {
		Resources, LimitResources *wireResource
		ExtendedResources         []*json.RawMessage
		Msgs                      []*json.RawMessage
		NetLimit                  *json.RawMessage
		ProcInfo                  *json.RawMessage
	}
	Cpuset                                          bool
	HealthChecks                                    []*wireHealthCheck
	HealthCheckStatus                               []*json.RawMessage
	Healthy, IsChecked                              bool
	ConsecutiveFailureTimes                         uint32
	LocalMaxConsecutiveFailures                     uint32
	OfferId, AgentId, AgentHostname, AgentIPAddress string
	Status, LastStatus                              string
	UpdateTime                                      int64
	StatusData, AppId, RunAs                        string
	KillPolicy                                      *wireKillPolicy
	Uris                                            []string
	LastUpdateTime                                  int64
	Message                                         string
}

type wireDeploymentApp struct {
	ApplicationName         string `json:"name"`
	CurrentTargetInstances  int    `json:"curr_target_instances"`
	CurrentRollingInstances int
}

type wireDeployment struct {
	ObjectMeta wireMeta          `json:"metadata"`
	Selector   map[string]string `json:"selector"`
	Strategy   struct {
		Type          string `json:"type"`
		RollingUpdate *struct {
			MaxUnavilable   int    `json:"maxUnavilable"`
			MaxSurge        int    `json:"maxSurge"`
			UpgradeDuration int    `json:"upgradeDuration"`
			RollingOrder    string `json:"rollingOrder"`
			RollingManually bool   `json:"rollingManually"`
		} `json:"rollingupdate"`
	} `json:"strategy"`
	Status          string             `json:"status"`
	Application     *wireDeploymentApp `json:"application"`
	ApplicationExt  *wireDeploymentApp `json:"application_ext"`
	LastRollingTime int64              `json:"last_rolling_time"`
	CurrRollingOp   string             `json:"curr_rolling_operation"`
	IsInRolling     bool               `json:"is_in_rolling"`
	CheckTime       int64              `json:"check_time"`
	Message         string             `json:"message"`
	RawJson         *json.RawMessage   `json:"raw_json"`
	RawJsonBackup   *json.RawMessage   `json:"raw_json_backup"`
}

type wireAgentAttribute struct {
	Name   string `json:"name"`
	Type   int32  `json:"type"`
	Scalar *struct {
		Value float64 `json:"value"`
	} `json:"scalar"`
	Ranges []*struct {
		Begin uint64 `json:"begin"`
		End   uint64 `json:"end"`
	} `json:"ranges"`
	Set *struct {
		Item []string `json:"item"`
	} `json:"set"`
	Text *struct {
		Value string `json:"value"`
	} `json:"text"`
}

type wireClusterResource struct {
	DiskTotal float64 `json:"disktotal"`
	MemTotal  float64 `json:"memtotal"`
	CPUTotal  float64 `json:"cputotal"`
	DiskUsed  float64 `json:"diskused"`
	MemUsed   float64 `json:"memused"`
	CPUUsed   float64 `json:"cpuused"`
	Agents    []struct {
		HostName         string                `json:"hostname"`
		IP               string                `json:"ip"`
		DiskTotal        float64               `json:"disktotal"`
		MemTotal         float64               `json:"memtotal"`
		CPUTotal         float64               `json:"cputotal"`
		DiskUsed         float64               `json:"diskused"`
		MemUsed          float64               `json:"memused"`
		CPUUsed          float64               `json:"cpuused"`
		Disabled         bool                  `json:"disabled"`
		HostAttributes   []*wireAgentAttribute `json:"host_attributes"`
		Attributes       []*wireAgentAttribute `json:"attributes"`
		RegisteredTime   int64                 `json:"registered_time"`
		ReRegisteredTime int64                 `json:"reregistered_time"`
	} `json:"agents"`
}

// decodeBCS decodes an answer's data into BCS's type: a value of another JSON type fails
// it, as it failed BCS's clients. It also asks that every key berth sends be one of the
// type's, so a misspelt key cannot pass unseen.
func decodeBCS(t *testing.T, what string, a bcsAnswer, into any) {
	t.Helper()
	wantBCS(t, a, 0)
	if err := json.Unmarshal(a.Data, into); err != nil {
		t.Fatalf("%s: BCS's types do not decode berth's answer: %v\n%s", what, err, a.Data)
	}
	d := json.NewDecoder(bytes.NewReader(a.Data))
	d.DisallowUnknownFields()
	if err := d.Decode(into); err != nil {
		t.Errorf("%s: a key BCS's type lacks: %v\n%s", what, err, a.Data)
	}
}

const secretValue = "TOPSECRET-5f1c9e"

// shapesApp uses every task field BCS's Task carries that berth knows, an env from a
// secret among them.
const shapesApp = `{"apiVersion":"v4","kind":"application","metadata":{"name":"web","namespace":"sh","labels":{"app":"web"}},
 "restartPolicy":{"policy":"Always","interval":5,"backoff":10,"maxtimes":3},
 "killPolicy":{"gracePeriod":7},
 "spec":{"instance":1,"template":{"spec":{"networkMode":"BRIDGE","containers":[{"name":"main","image":"nginx:1","privileged":true,
   "command":"/bin/run","args":["-v"],"parameters":[{"key":"ulimit","value":"nofile=1024"}],
   "env":[{"name":"PLAIN","value":"p1"}],
   "ports":[{"name":"http","containerPort":80,"hostPort":0,"protocol":"HTTP"}],
   "volumes":[{"name":"d","volume":{"hostPath":"/data/x","mountPath":"/x","readOnly":true}}],
   "healthChecks":[{"type":"HTTP","intervalSeconds":30,"timeoutSeconds":5,"consecutiveFailures":3,"http":{"portName":"http","path":"/healthz","scheme":"http"}}],
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
			Tasks: []v4.TaskStatus{{Name: "main", Status: v4.StatusRunning, Info: v4.ContainerInfo{ConsecutiveFailureTimes: 2}}}}
	})
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

	var apps []wireApplication
	decodeBCS(t, "applications", get("/applications"), &apps)
	if len(apps) != 1 || apps[0].SubStatus != "Unknown" || apps[0].DefineInstances != 1 || apps[0].ClusterId != "BCS-MESOS-10001" {
		t.Errorf("applications: %+v", apps)
	}
	var one wireApplication
	decodeBCS(t, "application", get("/applications/web"), &one)

	var tgs []wireTaskGroup
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
	if len(task.HealthChecks) != 1 || task.HealthChecks[0].Type != "HTTP" || task.HealthChecks[0].ConsecutiveFailures != 3 ||
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

	var ids []string
	wantBCS(t, get("/applications/web/versions"), 0)
	if err := json.Unmarshal([]byte(bodies[len(bodies)-1]), &ids); err != nil || len(ids) != 1 {
		t.Fatalf("versions: %v %s", err, bodies[len(bodies)-1])
	}
	wantBCS(t, get("/applications/web/versions/"+ids[0]), 0)

	var deps []wireDeployment
	decodeBCS(t, "deployments", get("/deployments"), &deps)
	var dep wireDeployment
	decodeBCS(t, "deployment", get("/deployments/web"), &dep)
	if dep.Status != "Update" || !dep.IsInRolling || dep.CurrRollingOp != "START" || dep.CheckTime != 1700000000 ||
		dep.ApplicationExt == nil || dep.ApplicationExt.ApplicationName != "web-v2" || dep.ApplicationExt.CurrentRollingInstances != 1 {
		t.Errorf("deployment: %+v ext %+v", dep, dep.ApplicationExt)
	}

	var res wireClusterResource
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

	b64 := base64.StdEncoding.EncodeToString([]byte(secretValue))
	for _, body := range bodies {
		if strings.Contains(body, secretValue) || strings.Contains(body, b64) {
			t.Errorf("a secret's value in an answer: %s", body)
		}
	}
}
