package bcswire

import (
	"encoding/json"
	"time"
)

// Response is the envelope of every answer, as bcs-common's APIRespone: bcs-client reads
// code (an int), message (a string) and data (re-encoded, then decoded into the type of
// the command, or ignored by a write). Warnings is berth's own key (what berth read
// differently, also sent as Warning headers): BCS's clients, which decode the envelope
// key by key, never see it.
type Response struct {
	Result   bool            `json:"result"`
	Code     int             `json:"code"`
	Message  string          `json:"message"`
	Data     json.RawMessage `json:"data"`
	Warnings []string        `json:"warnings,omitempty"`
}

// SendFailure is one task group an application's message did not reach, as the
// scheduler's SendMessage answers listed them.
type SendFailure struct {
	ID     string `json:"ID"`
	Status string `json:"Status"`
	Err    string `json:"Err"`
}

// StorageItem is one document of bcs-storage's dynamic collections: storage's own keys
// around data, which bcs-client decodes into the type's *Set (ApplicationSet, ...).
type StorageItem[T any] struct {
	ID           string    `json:"_id"`
	ClusterID    string    `json:"clusterId"`
	Namespace    string    `json:"namespace"`
	ResourceName string    `json:"resourceName"`
	ResourceType string    `json:"resourceType"`
	Data         T         `json:"data"`
	CreateTime   time.Time `json:"createTime"`
	UpdateTime   time.Time `json:"updateTime"`
}

// RCStatus is BCS's BcsReplicaControllerStatus (bcs-mesos-watch's application and
// process documents). Its ObjectMeta is embedded under "metadata".
type RCStatus struct {
	ObjectMeta      ObjectMeta `json:"metadata"`
	Instance        int        `json:"instance"`
	BuildedInstance int        `json:"buildedInstance"`
	RunningInstance int        `json:"runningInstance"`
	CreateTime      time.Time  `json:"createTime"`
	LastUpdateTime  time.Time  `json:"lastUpdateTime,omitempty"`
	ReportTime      time.Time  `json:"reportTime,omitempty"`
	Status          string     `json:"status"`
	LastStatus      string     `json:"lastStatus,omitempty"`
	Message         string     `json:"message"`
	Pods            []*struct {
		Name string `json:"name"`
	} `json:"pods"`
	Kind string `json:"kind"`
}

// PodStatus is BCS's BcsPodStatus (a task group's document). BCS's tags read
// "status, omitempty" and the like: the option is not Go's, so the key is the name.
type PodStatus struct {
	ObjectMeta        ObjectMeta         `json:"metadata"`
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
	KillPolicy        *KillPolicy        `json:"killPolicy"`
	RestartPolicy     *RestartPolicy     `json:"restartPolicy"`
	ContainerStatuses []*ContainerStatus `json:"containerStatuses"`
	BcsMessage        string             `json:"bcsMessage"`
	Kind              string             `json:"kind"`
}

// ContainerStatus is BCS's BcsContainerStatus; its ports, volumes and resources, which
// berth does not answer, are kept raw.
type ContainerStatus struct {
	Name              string    `json:"name"`
	ContainerID       string    `json:"containerID"`
	RestartCount      int32     `json:"restartCount"`
	Status            string    `json:"status"`
	LastStatus        string    `json:"lastStatus"`
	TerminateExitCode int       `json:"exitcode"`
	Image             string    `json:"image"`
	Message           string    `json:"message"`
	StartTime         time.Time `json:"startTime,omitempty"`
	LastUpdateTime    time.Time `json:"lastUpdateTime,omitempty"`
	FinishTime        time.Time `json:"finishTime,omitempty"`
	HealthCheckStatus []*struct {
		Type    string `json:"type"`
		Result  bool   `json:"result"`
		Message string `json:"message"`
	} `json:"healCheckStatus,omitempty"`
	Ports     []*json.RawMessage `json:"containerPort,omitempty"`
	Command   string             `json:"command,omitempty"`
	Args      []string           `json:"args,omitempty"`
	Volumes   []*json.RawMessage `json:"volumes,omitempty"`
	Network   string             `json:"networkMode,omitempty"`
	Labels    map[string]string  `json:"labels,omitempty"`
	Resources *json.RawMessage   `json:"resources,omitempty"`
	Env       map[string]string  `json:"env,omitempty"`
}
