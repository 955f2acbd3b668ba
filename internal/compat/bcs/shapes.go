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

// subStatusUnknown is BCS's application sub-status outside the steps of its own rolling
// update, which berth runs as a deployment's rollout instead. LastStatus is the status
// before the current one (the controller keeps it, status.lastPhase). Mode is empty, as
// BCS's scheduler left it: it created applications without one and never set it.
const subStatusUnknown = "Unknown"

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
	SubStatus        string        `json:"SubStatus"`
	LastStatus       string        `json:"LastStatus"`
	Mode             string        `json:"Mode"`
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
		RunAs: m.Namespace, ClusterID: cluster, Status: w.Status.Phase, SubStatus: subStatusUnknown, LastStatus: w.Status.LastPhase, Message: w.Status.Message,
		Created: unix(m.CreationTimestamp), UpdateTime: unix(w.Status.Updated), LastUpdateTime: unix(w.Status.Updated),
		Pods: []bcsPodIndex{}}
	for _, tg := range tgs {
		a.Pods = append(a.Pods, bcsPodIndex{Name: tg.Metadata.Name})
	}
	return a
}

// bcsVersion is BCS's Version, as far as berth keeps it: the definition, whole, in
// RawJson (what BCS's own clients read of it), with its labels and policies.
type bcsVersion struct {
	ID            string            `json:"ID"`
	Name          string            `json:"Name"`
	ObjectMeta    bcsMeta           `json:"ObjectMeta"`
	Instances     int               `json:"Instances"`
	RunAs         string            `json:"RunAs"`
	Labels        map[string]string `json:"Labels,omitempty"`
	KillPolicy    *v4.KillPolicy    `json:"KillPolicy,omitempty"`
	RestartPolicy *bcsRestartPolicy `json:"RestartPolicy,omitempty"`
	Kind          string            `json:"Kind"`
	RawJSON       json.RawMessage   `json:"raw_json,omitempty"`
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
	CurrRollingOp   string            `json:"curr_rolling_operation"`
	IsInRolling     bool              `json:"is_in_rolling"`
	CheckTime       int64             `json:"check_time"`
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

// bcsDeploymentApp is BCS's DeploymentReferApplication; its third key is untagged (a
// misspelt tag), so Go's field name.
type bcsDeploymentApp struct {
	Name                    string `json:"name"`
	CurrTargetInstances     int    `json:"curr_target_instances"`
	CurrentRollingInstances int    `json:"CurrentRollingInstances"`
}

// deploymentOf maps a deployment and its child applications (by name): BCS's
// application is the current one, application_ext the new one during an update.
func deploymentOf(d *v4.Deployment, children []*v4.Workload, cluster string) bcsDeployment {
	st := d.Status
	out := bcsDeployment{ObjectMeta: metaOf(d.Metadata, cluster), Selector: d.Spec.Selector, Strategy: strategyOf(d.Spec.Strategy),
		Status: st.Phase, LastRollingTime: unix(st.LastStep), CheckTime: unix(st.Updated), Message: st.Message}
	if out.Status == v4.DeploymentUpdating {
		out.Status = "Update" // BCS's word
	}
	switch st.Phase {
	case v4.DeploymentUpdating, v4.DeploymentUpdatePaused, v4.DeploymentUpdateSuspend:
		// BCS's rolling operation is START while a rollout is under way; berth deletes
		// a deployment at once, so DELETE is never current.
		out.IsInRolling, out.CurrRollingOp = true, "START"
	}
	current := d.Metadata.Name + "-v" + strconv.Itoa(st.Revision)
	for _, c := range children {
		ref := &bcsDeploymentApp{Name: c.Metadata.Name, CurrTargetInstances: c.Spec.Instance}
		if c.Metadata.Name == current && out.IsInRolling {
			ref.CurrentRollingInstances = st.Current
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
