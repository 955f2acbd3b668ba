package bcs

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
)

// BCS's TaskGroup and Task, field for field as its clients decode them: the keys are Go's
// field names (BCS's types carry no JSON tags), and a key's JSON type is what BCS's Go
// type decodes, so a client built on those types decodes berth's answer whole.

// bcsTaskGroup is BCS's TaskGroup: one instance, its tasks inside.
type bcsTaskGroup struct {
	Kind            string              `json:"Kind"`
	ID              string              `json:"ID"`
	Name            string              `json:"Name"`
	AppID           string              `json:"AppID"`
	RunAs           string              `json:"RunAs"`
	ObjectMeta      bcsMeta             `json:"ObjectMeta"`
	AgentID         string              `json:"AgentID"`
	ExecutorID      string              `json:"ExecutorID"`
	Status          string              `json:"Status"`
	LastStatus      string              `json:"LastStatus"`
	InstanceID      int                 `json:"InstanceID"`
	Taskgroup       []bcsTask           `json:"Taskgroup"`
	KillPolicy      *v4.KillPolicy      `json:"KillPolicy,omitempty"`
	RestartPolicy   *bcsRestartPolicy   `json:"RestartPolicy,omitempty"`
	VersionName     string              `json:"VersionName"`
	LastUpdateTime  int64               `json:"LastUpdateTime"`
	Attributes      []bcsMesosAttribute `json:"Attributes"`
	StartTime       int64               `json:"StartTime"`
	UpdateTime      int64               `json:"UpdateTime"`
	ReschededTimes  int                 `json:"ReschededTimes"`
	LastReschedTime int64               `json:"LastReschedTime"`
	HostName        string              `json:"HostName"`
	Message         string              `json:"Message"`
	LaunchResource  *bcsResource        `json:"LaunchResource,omitempty"`
	CurrResource    *bcsResource        `json:"CurrResource,omitempty"`
}

// bcsRestartPolicy is BCS's RestartPolicy (tagged as its definition is written).
type bcsRestartPolicy struct {
	Policy         string `json:"policy"`
	Interval       int    `json:"interval"`
	Backoff        int    `json:"backoff"`
	MaxTimes       int    `json:"maxtimes"`
	HostRetainTime int    `json:"hostRetainTime,omitempty"`
}

func restartPolicyOf(p *v4.RestartPolicy) *bcsRestartPolicy {
	if p == nil {
		return nil
	}
	return &bcsRestartPolicy{Policy: p.Policy, Interval: p.Interval, Backoff: p.Backoff, MaxTimes: p.MaxTimes, HostRetainTime: p.HostRetainTime}
}

// bcsMesosAttribute is a Mesos Attribute as Mesos's Go types encode it: the value type
// is Mesos's enum number (3 is TEXT); berth records text values only.
type bcsMesosAttribute struct {
	Name string   `json:"name"`
	Type int      `json:"type"`
	Text *bcsText `json:"text,omitempty"`
}

const mesosText = 3

// bcsResource is BCS's Resource: cores and MB.
type bcsResource struct {
	Cpus float64 `json:"Cpus"`
	Mem  float64 `json:"Mem"`
	Disk float64 `json:"Disk"`
}

// bcsTask is BCS's Task (its key "Hostame" is spelt as BCS spelt it).
type bcsTask struct {
	Kind                    string            `json:"Kind"`
	ID                      string            `json:"ID"`
	Name                    string            `json:"Name"`
	Hostame                 string            `json:"Hostame"`
	Command                 string            `json:"Command"`
	Arguments               []string          `json:"Arguments"`
	Image                   string            `json:"Image"`
	Network                 string            `json:"Network"`
	NetworkType             string            `json:"NetworkType"`
	PortMappings            []bcsPortMapping  `json:"PortMappings"`
	Privileged              bool              `json:"Privileged"`
	Parameters              []bcsParameter    `json:"Parameters"`
	ForcePullImage          bool              `json:"ForcePullImage"`
	Volumes                 []bcsVolume       `json:"Volumes"`
	Env                     map[string]string `json:"Env"`
	Labels                  map[string]string `json:"Labels,omitempty"`
	DataClass               *bcsDataClass     `json:"DataClass,omitempty"`
	HealthChecks            []v4.HealthCheck  `json:"HealthChecks"`
	HealthCheckStatus       []bcsCheckStatus  `json:"HealthCheckStatus"`
	Healthy                 bool              `json:"Healthy"`
	IsChecked               bool              `json:"IsChecked"`
	ConsecutiveFailureTimes int               `json:"ConsecutiveFailureTimes"`
	AgentID                 string            `json:"AgentId"`
	AgentHostname           string            `json:"AgentHostname"`
	AgentIPAddress          string            `json:"AgentIPAddress"`
	Status                  string            `json:"Status"`
	LastStatus              string            `json:"LastStatus"`
	UpdateTime              int64             `json:"UpdateTime"`
	StatusData              string            `json:"StatusData"`
	AppID                   string            `json:"AppId"`
	RunAs                   string            `json:"RunAs"`
	KillPolicy              *v4.KillPolicy    `json:"KillPolicy,omitempty"`
	LastUpdateTime          int64             `json:"LastUpdateTime"`
	Message                 string            `json:"Message"`
	NetLimit                *v4.NetLimit      `json:"NetLimit,omitempty"`
}

// bcsCheckStatus is BCS's BcsHealthCheckStatus: a remote check's last result.
type bcsCheckStatus struct {
	Type    string `json:"type"`
	Result  bool   `json:"result"`
	Message string `json:"message,omitempty"`
}

type bcsPortMapping struct {
	ContainerPort int    `json:"ContainerPort"`
	HostPort      int    `json:"HostPort"`
	Name          string `json:"Name"`
	Protocol      string `json:"Protocol"`
}

type bcsParameter struct {
	Key   string `json:"Key"`
	Value string `json:"Value"`
}

// bcsVolume is BCS's Volume: Mode is RW, or RO for a read-only one.
type bcsVolume struct {
	ContainerPath string `json:"ContainerPath"`
	HostPath      string `json:"HostPath"`
	Mode          string `json:"Mode"`
}

// bcsDataClass is the part of BCS's DataClass berth knows: requests and limits,
// extended resources, the network limit and a process's definition.
type bcsDataClass struct {
	Resources         *bcsResource          `json:"Resources,omitempty"`
	LimitResources    *bcsResource          `json:"LimitResources,omitempty"`
	ExtendedResources []v4.ExtendedResource `json:"ExtendedResources,omitempty"`
	NetLimit          *v4.NetLimit          `json:"NetLimit,omitempty"`
	ProcInfo          *bcsProcDef           `json:"ProcInfo,omitempty"`
}

// bcsProcDef is BCS's ProcDef, a process task's commands and paths.
type bcsProcDef struct {
	ProcName         string   `json:"procName"`
	WorkPath         string   `json:"workPath"`
	PidFile          string   `json:"pidFile"`
	StartCmd         string   `json:"startCmd"`
	StopCmd          string   `json:"stopCmd"`
	RestartCmd       string   `json:"restartCmd"`
	ReloadCmd        string   `json:"reloadCmd"`
	KillCmd          string   `json:"killCmd"`
	LogPath          string   `json:"logPath"`
	CfgPath          string   `json:"cfgPath"`
	Uris             []bcsURI `json:"uris"`
	StartGracePeriod int      `json:"startGracePeriod"`
}

// bcsURI is BCS's Uri (untagged) without its password: answers carry no credentials.
type bcsURI struct {
	Value     string `json:"Value"`
	User      string `json:"User"`
	OutputDir string `json:"OutputDir"`
}

// taskGroupOf maps a task group; restart is its owner's restart policy (nil when none).
func taskGroupOf(tg *v4.TaskGroup, restart *v4.RestartPolicy, cluster string) bcsTaskGroup {
	m, st := tg.Metadata, tg.Status
	out := bcsTaskGroup{Kind: string(tg.Spec.Owner.Kind), ID: m.Name, Name: tg.Spec.Owner.Name + "-" + strconv.Itoa(tg.Spec.Index),
		AppID: tg.Spec.Owner.Name, RunAs: m.Namespace, ObjectMeta: metaOf(m, cluster), AgentID: tg.Spec.Node, ExecutorID: m.Name,
		Status: st.Phase, LastStatus: st.LastPhase, InstanceID: tg.Spec.Index, VersionName: tg.Spec.OwnerVersion,
		StartTime: unix(st.StartedAt), UpdateTime: unix(st.Updated), LastUpdateTime: unix(st.Updated),
		ReschededTimes: tg.Spec.ReschedTimes, LastReschedTime: unix(tg.Spec.LastRescheduled),
		HostName: tg.Spec.Node, Message: st.Message, Attributes: mesosAttributes(tg.Spec.Attributes), Taskgroup: []bcsTask{}}
	if tg.Spec.KillGracePeriod > 0 {
		out.KillPolicy = &v4.KillPolicy{GracePeriod: tg.Spec.KillGracePeriod}
	}
	out.RestartPolicy = restartPolicyOf(restart)
	if r := tg.Spec.Resources; r.CPU != 0 || r.MemoryMB != 0 || r.DiskMB != 0 {
		res := &bcsResource{Cpus: r.CPU, Mem: r.MemoryMB, Disk: r.DiskMB}
		out.LaunchResource, out.CurrResource = res, res
	}
	spec := &tg.Spec.Template.Spec
	statuses := map[string]v4.TaskStatus{}
	for _, ts := range st.Tasks {
		statuses[ts.Name] = ts
	}
	for i, name := range v4.TaskNames(spec) {
		t := bcsTask{Kind: out.Kind, ID: m.Name + "." + strconv.Itoa(i), Name: name, AgentID: tg.Spec.Node, AgentHostname: tg.Spec.Node,
			AgentIPAddress: st.HostIP, AppID: out.AppID, RunAs: m.Namespace, Network: spec.NetworkMode, NetworkType: spec.NetworkType,
			Labels: tg.Spec.Labels, PortMappings: []bcsPortMapping{}, Arguments: []string{}, Parameters: []bcsParameter{},
			Volumes: []bcsVolume{}, Env: map[string]string{}, HealthChecks: []v4.HealthCheck{}, KillPolicy: out.KillPolicy,
			UpdateTime: out.UpdateTime, LastUpdateTime: out.LastUpdateTime, NetLimit: spec.NetLimit}
		switch {
		case i < len(spec.Containers):
			containerTask(&t, tg, spec.Containers[i])
		case i-len(spec.Containers) < len(spec.Processes):
			processTask(&t, tg, spec.Processes[i-len(spec.Containers)])
		}
		t.HealthCheckStatus = remoteStatus(t.HealthChecks, st.Remote)
		if ts, ok := statuses[name]; ok {
			t.Status, t.LastStatus, t.Message = ts.Status, ts.LastStatus, ts.Message
			t.Healthy, t.IsChecked, t.ConsecutiveFailureTimes = ts.Info.Healthy, ts.Info.IsChecked, ts.Info.ConsecutiveFailureTimes
			if ts.Healthy != nil {
				t.Healthy, t.IsChecked = *ts.Healthy, true
			}
			if data, err := json.Marshal(ts.Info); err == nil {
				t.StatusData = string(data)
			}
		}
		out.Taskgroup = append(out.Taskgroup, t)
	}
	return out
}

func containerTask(t *bcsTask, tg *v4.TaskGroup, c v4.Container) {
	t.Hostame, t.Command, t.Image, t.Privileged = c.Hostname, c.Command, c.Image, c.Privileged
	t.ForcePullImage = c.ImagePullPolicy == v4.PullAlways
	if c.Args != nil {
		t.Arguments = c.Args
	}
	for _, p := range c.Ports {
		t.PortMappings = append(t.PortMappings, bcsPortMapping{ContainerPort: p.ContainerPort, HostPort: hostPort(tg, p.Name, p.HostPort), Name: p.Name, Protocol: p.Protocol})
	}
	for _, p := range c.Parameters {
		t.Parameters = append(t.Parameters, bcsParameter{Key: p.Key, Value: p.Value})
	}
	for _, v := range c.Volumes {
		mode := "RW"
		if v.Volume.ReadOnly {
			mode = "RO"
		}
		t.Volumes = append(t.Volumes, bcsVolume{ContainerPath: v.Volume.MountPath, HostPath: v.Volume.HostPath, Mode: mode})
	}
	t.Env = envOf(c.Env, c.Secrets)
	if c.HealthChecks != nil {
		t.HealthChecks = c.HealthChecks
	}
	t.DataClass = dataClassOf(c.Resources, tg.Spec.Template.Spec.NetLimit)
}

func processTask(t *bcsTask, tg *v4.TaskGroup, p v4.ProcessTask) {
	t.Command = p.StartCmd
	for _, port := range p.Ports {
		t.PortMappings = append(t.PortMappings, bcsPortMapping{HostPort: hostPort(tg, port.Name, port.HostPort), Name: port.Name, Protocol: port.Protocol})
	}
	t.Env = envOf(p.Env, p.Secrets)
	if p.HealthChecks != nil {
		t.HealthChecks = p.HealthChecks
	}
	t.DataClass = dataClassOf(p.Resources, tg.Spec.Template.Spec.NetLimit)
	if t.DataClass == nil {
		t.DataClass = &bcsDataClass{}
	}
	t.DataClass.ProcInfo = &bcsProcDef{ProcName: p.ProcName, WorkPath: p.WorkPath, PidFile: p.PidFile, StartCmd: p.StartCmd,
		StopCmd: p.StopCmd, RestartCmd: p.RestartCmd, ReloadCmd: p.ReloadCmd, KillCmd: p.KillCmd, LogPath: p.LogPath,
		CfgPath: p.CfgPath, Uris: []bcsURI{}, StartGracePeriod: p.StartGracePeriod}
	for _, u := range p.URIs {
		t.DataClass.ProcInfo.Uris = append(t.DataClass.ProcInfo.Uris, bcsURI{Value: u.Value, User: u.User, OutputDir: u.OutputDir})
	}
}

// envOf is a task's environment as BCS listed it. A variable from a secret shows the
// secret's reference in BCS's own notation (secret::name||key), never its value, which
// berth keeps in the secret alone; one computed from resources shows nothing, as its
// value exists only on the node.
func envOf(env []v4.EnvVar, secrets []v4.SecretRef) map[string]string {
	out := map[string]string{}
	for _, e := range env {
		if e.ValueFrom == nil {
			out[e.Name] = e.Value
		}
	}
	for _, s := range secrets {
		for _, it := range s.Items {
			if it.Type == "env" {
				out[it.KeyOrPath] = "secret::" + s.SecretName + "||" + it.DataKey
			}
		}
	}
	return out
}

// dataClassOf is a task's requests and limits in cores and MB (requests default to
// limits, as BCS's did), its extended resources and the pod's network limit.
func dataClassOf(r *v4.Resources, net *v4.NetLimit) *bcsDataClass {
	dc := &bcsDataClass{NetLimit: net}
	if r != nil {
		dc.Resources, dc.LimitResources, dc.ExtendedResources = resourceOf(r.Requests), resourceOf(r.Limits), r.ExtendedResources
		if dc.Resources == nil {
			dc.Resources = dc.LimitResources
		}
	}
	if dc.Resources == nil && dc.LimitResources == nil && dc.ExtendedResources == nil && dc.NetLimit == nil {
		return nil
	}
	return dc
}

func resourceOf(l *v4.ResourceList) *bcsResource {
	if l == nil {
		return nil
	}
	num := func(q v4.Quantity) float64 {
		f, _ := strconv.ParseFloat(string(q), 64)
		return f
	}
	return &bcsResource{Cpus: num(l.CPU), Mem: num(l.Memory), Disk: num(l.Storage)}
}

// mesosAttributes are the attributes recorded at placement as Mesos's text attributes,
// by name.
func mesosAttributes(at map[string]string) []bcsMesosAttribute {
	out := []bcsMesosAttribute{}
	for _, k := range slices.Sorted(maps.Keys(at)) {
		out = append(out, bcsMesosAttribute{Name: k, Type: mesosText, Text: &bcsText{Value: at[k]}})
	}
	return out
}

// remoteStatus is the last result of a task's remote checks: berth keeps one per task
// group, from the server's remote checker, given here to each REMOTE_ check of the task.
func remoteStatus(checks []v4.HealthCheck, remote *v4.RemoteHealth) []bcsCheckStatus {
	out := []bcsCheckStatus{}
	if remote == nil {
		return out
	}
	for _, c := range checks {
		if c.Type == v4.CheckRemoteHTTP || c.Type == v4.CheckRemoteTCP {
			out = append(out, bcsCheckStatus{Type: c.Type, Result: remote.Healthy, Message: remote.Message})
		}
	}
	return out
}

// hostPort is the port the scheduler allocated for a named port, else the one asked for.
func hostPort(tg *v4.TaskGroup, name string, asked int) int {
	for _, p := range tg.Spec.Ports {
		if p.Name == name {
			return p.HostPort
		}
	}
	return asked
}
