package bcs

import (
	"encoding/json"
	"strconv"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// BCS's scheduler answered its own Go types, most without JSON tags (so with Go's field
// names as keys). These are the keys its clients read, filled from berth's objects; what
// berth has no counterpart for is left out rather than made up.

// bcsMeta is BCS's ObjectMeta (tagged).
type bcsMeta struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace"`
	CreationTimestamp time.Time         `json:"creationTimestamp"`
	Labels            map[string]string `json:"labels,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
	ClusterName       string            `json:"clusterName,omitempty"`
}

func metaOf(m v4.ObjectMeta, cluster string) bcsMeta {
	return bcsMeta{Name: m.Name, Namespace: m.Namespace, CreationTimestamp: m.CreationTimestamp,
		Labels: m.Labels, Annotations: m.Annotations, ClusterName: cluster}
}

type bcsPodIndex struct {
	Name string `json:"name"`
}

// bcsApplication is BCS's Application: an application's or a process's state.
type bcsApplication struct {
	Kind             string        `json:"Kind"`
	ID               string        `json:"ID"`
	Name             string        `json:"Name"`
	ObjectMeta       bcsMeta       `json:"ObjectMeta"`
	DefineInstances  int           `json:"DefineInstances"`
	Instances        int           `json:"Instances"`
	RunningInstances int           `json:"RunningInstances"`
	RunAs            string        `json:"RunAs"`
	ClusterID        string        `json:"ClusterId"`
	Status           string        `json:"Status"`
	Created          int64         `json:"Created"`
	UpdateTime       int64         `json:"UpdateTime"`
	LastUpdateTime   int64         `json:"LastUpdateTime"`
	Message          string        `json:"Message"`
	Pods             []bcsPodIndex `json:"Pods"`
}

func applicationOf(w *v4.Workload, kind v4.Kind, tgs []*v4.TaskGroup, cluster string) bcsApplication {
	m := w.Metadata
	a := bcsApplication{Kind: string(kind), ID: m.Name, Name: m.Name, ObjectMeta: metaOf(m, cluster),
		DefineInstances: w.Spec.Instance, Instances: len(tgs), RunningInstances: w.Status.Running,
		RunAs: m.Namespace, ClusterID: cluster, Status: w.Status.Phase, Message: w.Status.Message,
		Created: unix(m.CreationTimestamp), UpdateTime: unix(w.Status.Updated), LastUpdateTime: unix(w.Status.Updated),
		Pods: []bcsPodIndex{}}
	for _, tg := range tgs {
		a.Pods = append(a.Pods, bcsPodIndex{Name: tg.Metadata.Name})
	}
	return a
}

// bcsTaskGroup is BCS's TaskGroup: one instance, its tasks inside.
type bcsTaskGroup struct {
	Kind            string            `json:"Kind"`
	ID              string            `json:"ID"`
	Name            string            `json:"Name"`
	AppID           string            `json:"AppID"`
	RunAs           string            `json:"RunAs"`
	ObjectMeta      bcsMeta           `json:"ObjectMeta"`
	ExecutorID      string            `json:"ExecutorID"`
	Status          string            `json:"Status"`
	InstanceID      int               `json:"InstanceID"`
	Taskgroup       []bcsTask         `json:"Taskgroup"`
	KillPolicy      *v4.KillPolicy    `json:"KillPolicy,omitempty"`
	VersionName     string            `json:"VersionName"`
	StartTime       int64             `json:"StartTime"`
	UpdateTime      int64             `json:"UpdateTime"`
	LastUpdateTime  int64             `json:"LastUpdateTime"`
	ReschededTimes  int               `json:"ReschededTimes"`
	LastReschedTime int64             `json:"LastReschedTime"`
	HostName        string            `json:"HostName"`
	Message         string            `json:"Message"`
	Attributes      map[string]string `json:"Attributes,omitempty"`
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
	PortMappings            []bcsPortMapping  `json:"PortMappings"`
	Labels                  map[string]string `json:"Labels,omitempty"`
	Healthy                 bool              `json:"Healthy"`
	IsChecked               bool              `json:"IsChecked"`
	ConsecutiveFailureTimes int               `json:"ConsecutiveFailureTimes"`
	AgentHostname           string            `json:"AgentHostname"`
	AgentIPAddress          string            `json:"AgentIPAddress"`
	Status                  string            `json:"Status"`
	UpdateTime              int64             `json:"UpdateTime"`
	StatusData              string            `json:"StatusData"`
	AppID                   string            `json:"AppId"`
	RunAs                   string            `json:"RunAs"`
	Message                 string            `json:"Message"`
}

type bcsPortMapping struct {
	ContainerPort int    `json:"ContainerPort"`
	HostPort      int    `json:"HostPort"`
	Name          string `json:"Name"`
	Protocol      string `json:"Protocol"`
}

func taskGroupOf(tg *v4.TaskGroup, cluster string) bcsTaskGroup {
	m, st := tg.Metadata, tg.Status
	out := bcsTaskGroup{Kind: string(tg.Spec.Owner.Kind), ID: m.Name, Name: tg.Spec.Owner.Name + "-" + strconv.Itoa(tg.Spec.Index),
		AppID: tg.Spec.Owner.Name, RunAs: m.Namespace, ObjectMeta: metaOf(m, cluster), ExecutorID: m.Name,
		Status: st.Phase, InstanceID: tg.Spec.Index, VersionName: tg.Spec.OwnerVersion,
		StartTime: unix(st.StartedAt), UpdateTime: unix(st.Updated), LastUpdateTime: unix(st.Updated),
		ReschededTimes: tg.Spec.ReschedTimes, LastReschedTime: unix(tg.Spec.LastRescheduled),
		HostName: tg.Spec.Node, Message: st.Message, Attributes: tg.Spec.Attributes, Taskgroup: []bcsTask{}}
	if tg.Spec.KillGracePeriod > 0 {
		out.KillPolicy = &v4.KillPolicy{GracePeriod: tg.Spec.KillGracePeriod}
	}
	names := v4.TaskNames(&tg.Spec.Template.Spec)
	statuses := map[string]v4.TaskStatus{}
	for _, ts := range st.Tasks {
		statuses[ts.Name] = ts
	}
	for i, name := range names {
		t := bcsTask{Kind: out.Kind, ID: m.Name + "." + strconv.Itoa(i), Name: name, AgentHostname: tg.Spec.Node,
			AgentIPAddress: st.HostIP, AppID: out.AppID, RunAs: m.Namespace, Network: tg.Spec.Template.Spec.NetworkMode,
			Labels: tg.Spec.Labels, PortMappings: []bcsPortMapping{}, Arguments: []string{}}
		if i < len(tg.Spec.Template.Spec.Containers) {
			c := tg.Spec.Template.Spec.Containers[i]
			t.Hostame, t.Command, t.Image = c.Hostname, c.Command, c.Image
			if c.Args != nil {
				t.Arguments = c.Args
			}
			for _, p := range c.Ports {
				t.PortMappings = append(t.PortMappings, bcsPortMapping{ContainerPort: p.ContainerPort, HostPort: hostPort(tg, p.Name, p.HostPort), Name: p.Name, Protocol: p.Protocol})
			}
		}
		if ts, ok := statuses[name]; ok {
			t.Status, t.Message = ts.Status, ts.Message
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

// hostPort is the port the scheduler allocated for a named port, else the one asked for.
func hostPort(tg *v4.TaskGroup, name string, asked int) int {
	for _, p := range tg.Spec.Ports {
		if p.Name == name {
			return p.HostPort
		}
	}
	return asked
}

// bcsVersion is BCS's Version, as far as berth keeps it: the definition, whole, in
// RawJson (what BCS's own clients read of it).
type bcsVersion struct {
	ID         string          `json:"ID"`
	Name       string          `json:"Name"`
	ObjectMeta bcsMeta         `json:"ObjectMeta"`
	Instances  int             `json:"Instances"`
	RunAs      string          `json:"RunAs"`
	Kind       string          `json:"Kind"`
	RawJSON    json.RawMessage `json:"raw_json,omitempty"`
}

// versionID is the one version berth keeps of an application: the definition stored
// now, named as BCS named versions (a Unix time in nanoseconds), by its creation.
func versionID(m v4.ObjectMeta) string { return strconv.FormatInt(m.CreationTimestamp.UnixNano(), 10) }

// bcsDeployment is the scheduler's Deployment (tagged, snake case).
type bcsDeployment struct {
	ObjectMeta      bcsMeta           `json:"metadata"`
	Selector        map[string]string `json:"selector,omitempty"`
	Strategy        bcsStrategy       `json:"strategy"`
	Status          string            `json:"status"`
	Application     *bcsDeploymentApp `json:"application"`
	ApplicationExt  *bcsDeploymentApp `json:"application_ext"`
	LastRollingTime int64             `json:"last_rolling_time"`
	IsInRolling     bool              `json:"is_in_rolling"`
	Message         string            `json:"message"`
}

// bcsStrategy is BCS's UpgradeStrategy, its spelling of maxUnavilable included.
type bcsStrategy struct {
	Type          string            `json:"type"`
	RollingUpdate *bcsRollingUpdate `json:"rollingupdate,omitempty"`
}

type bcsRollingUpdate struct {
	MaxUnavailable  int    `json:"maxUnavilable"`
	MaxSurge        int    `json:"maxSurge"`
	UpgradeDuration int    `json:"upgradeDuration"`
	RollingManually bool   `json:"rollingManually"`
	RollingOrder    string `json:"rollingOrder"`
}

func strategyOf(s v4.DeploymentStrategy) bcsStrategy {
	out := bcsStrategy{Type: s.Type}
	if ru := s.RollingUpdate; ru != nil {
		out.RollingUpdate = &bcsRollingUpdate{MaxUnavailable: ru.MaxUnavailable, MaxSurge: ru.MaxSurge,
			UpgradeDuration: ru.UpgradeDuration, RollingManually: ru.RollingManually, RollingOrder: ru.RollingOrder}
	}
	return out
}

type bcsDeploymentApp struct {
	Name                string `json:"name"`
	CurrTargetInstances int    `json:"curr_target_instances"`
}

// deploymentOf maps a deployment and its child applications (by name): BCS's
// application is the current one, application_ext the new one during an update.
func deploymentOf(d *v4.Deployment, children []*v4.Workload, cluster string) bcsDeployment {
	st := d.Status
	out := bcsDeployment{ObjectMeta: metaOf(d.Metadata, cluster), Selector: d.Spec.Selector, Strategy: strategyOf(d.Spec.Strategy),
		Status: st.Phase, LastRollingTime: unix(st.LastStep), Message: st.Message}
	if out.Status == v4.DeploymentUpdating {
		out.Status = "Update" // BCS's word
	}
	switch st.Phase {
	case v4.DeploymentUpdating, v4.DeploymentUpdatePaused, v4.DeploymentUpdateSuspend:
		out.IsInRolling = true
	}
	current := d.Metadata.Name + "-v" + strconv.Itoa(st.Revision)
	for _, c := range children {
		ref := &bcsDeploymentApp{Name: c.Metadata.Name, CurrTargetInstances: c.Spec.Instance}
		if c.Metadata.Name == current && out.IsInRolling {
			out.ApplicationExt = ref
		} else if out.Application == nil || c.Metadata.Name == current {
			out.Application = ref
		}
	}
	return out
}

func unix(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}
