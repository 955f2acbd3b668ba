package bcs

import (
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// BCS's storage did not keep the scheduler's objects for applications, processes and task
// groups but the status documents bcs-mesos-watch reported (BcsReplicaControllerStatus,
// BcsPodStatus), with their own lower-case keys; bcs-client's list and inspect read those.
// Deployments, services, configmaps and secrets were stored as the documents themselves.

// storageRC is BCS's BcsReplicaControllerStatus: an application's or a process's state.
type storageRC struct {
	Meta            bcsMeta       `json:"metadata"`
	CreateTime      time.Time     `json:"createTime"`
	LastUpdateTime  time.Time     `json:"lastUpdateTime"`
	ReportTime      time.Time     `json:"reportTime"`
	Status          string        `json:"status"`
	LastStatus      string        `json:"lastStatus,omitempty"`
	Message         string        `json:"message"`
	Pods            []bcsPodIndex `json:"pods"`
	Instance        int           `json:"instance"`
	BuildedInstance int           `json:"buildedInstance"`
	RunningInstance int           `json:"runningInstance"`
	Kind            string        `json:"kind"`
}

func storageRCOf(w *v4.Workload, kind v4.Kind, tgs []*v4.TaskGroup, cluster string) storageRC {
	m := w.Metadata
	out := storageRC{Meta: metaOf(m, cluster), CreateTime: m.CreationTimestamp, LastUpdateTime: w.Status.Updated,
		ReportTime: w.Status.Updated, Status: w.Status.Phase, LastStatus: w.Status.LastPhase, Message: w.Status.Message, Pods: []bcsPodIndex{},
		Instance: w.Spec.Instance, BuildedInstance: len(tgs), RunningInstance: w.Status.Running, Kind: string(kind)}
	for _, tg := range tgs {
		out.Pods = append(out.Pods, bcsPodIndex{Name: tg.Metadata.Name})
	}
	return out
}

// storagePod is BCS's BcsPodStatus: one task group.
type storagePod struct {
	Meta              bcsMeta            `json:"metadata"`
	RcName            string             `json:"rcname"`
	Status            string             `json:"status"`
	LastStatus        string             `json:"lastStatus"`
	HostIP            string             `json:"hostIP"`
	HostName          string             `json:"hostName"`
	PodIP             string             `json:"podIP"`
	Message           string             `json:"message"`
	StartTime         time.Time          `json:"startTime"`
	LastUpdateTime    time.Time          `json:"lastUpdateTime"`
	ReportTime        time.Time          `json:"reportTime"`
	ContainerStatuses []storageContainer `json:"containerStatuses"`
	Kind              string             `json:"kind"`
}

// storageContainer is BCS's BcsContainerStatus, as far as berth knows it.
type storageContainer struct {
	Name         string    `json:"name"`
	ContainerID  string    `json:"containerID"`
	Status       string    `json:"status"`
	LastStatus   string    `json:"lastStatus,omitempty"`
	ExitCode     int       `json:"exitcode"`
	Image        string    `json:"image"`
	Message      string    `json:"message"`
	StartTime    time.Time `json:"startTime"`
	FinishTime   time.Time `json:"finishTime"`
	Command      string    `json:"command,omitempty"`
	Args         []string  `json:"args,omitempty"`
	NetworkMode  string    `json:"networkMode,omitempty"`
	RestartCount int       `json:"restartCount"`
}

func storagePodOf(tg *v4.TaskGroup, cluster string) storagePod {
	st := tg.Status
	out := storagePod{Meta: metaOf(tg.Metadata, cluster), RcName: tg.Spec.Owner.Name, Status: st.Phase, LastStatus: st.LastPhase,
		HostIP: st.HostIP, HostName: tg.Spec.Node, Message: st.Message, StartTime: st.StartedAt,
		LastUpdateTime: st.Updated, ReportTime: st.Updated, ContainerStatuses: []storageContainer{},
		Kind: string(tg.Spec.Owner.Kind)}
	statuses := map[string]v4.TaskStatus{}
	for _, ts := range st.Tasks {
		statuses[ts.Name] = ts
	}
	spec := &tg.Spec.Template.Spec
	for i, name := range v4.TaskNames(spec) {
		c := storageContainer{Name: name, NetworkMode: spec.NetworkMode}
		if i < len(spec.Containers) {
			sc := spec.Containers[i]
			c.Image, c.Command, c.Args = sc.Image, sc.Command, sc.Args
		}
		if ts, ok := statuses[name]; ok {
			c.Status, c.LastStatus, c.Message = ts.Status, ts.LastStatus, ts.Message
			c.ContainerID, c.ExitCode = ts.Info.ID, ts.Info.ExitCode
			c.StartTime, c.FinishTime = ts.Info.StartAt, ts.Info.FinishAt
			if out.PodIP == "" {
				out.PodIP = ts.Info.IPAddress
			}
		}
		out.ContainerStatuses = append(out.ContainerStatuses, c)
	}
	if out.PodIP == "" {
		out.PodIP = st.HostIP
	}
	return out
}
