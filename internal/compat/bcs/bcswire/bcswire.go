// Package bcswire reproduces BCS's Go types as BCS's clients decoded the scheduler's
// answers: the same keys (Go's field names where BCS had no JSON tags), the same Go types
// (unsigned counters, int32 ports, a Mesos attribute's pointers and enum number) and the
// same nesting. Tests decode berth's BCS answers into them: a value of another JSON type
// fails, as it failed a program built on BCS's types (docs/compat.md).
package bcswire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// ObjectMeta is BCS's ObjectMeta.
type ObjectMeta struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace"`
	CreationTimestamp time.Time         `json:"creationTimestamp"`
	Labels            map[string]string `json:"labels"`
	Annotations       map[string]string `json:"annotations"`
	ClusterName       string            `json:"clusterName"`
}

// Application is BCS's Application.
type Application struct {
	Kind, ID, Name                               string
	ObjectMeta                                   ObjectMeta
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

// KillPolicy is BCS's KillPolicy.
type KillPolicy struct {
	GracePeriod int64 `json:"gracePeriod"`
}

// RestartPolicy is BCS's RestartPolicy.
type RestartPolicy struct {
	Policy         string `json:"policy"`
	Interval       int    `json:"interval"`
	Backoff        int    `json:"backoff"`
	MaxTimes       int    `json:"maxtimes"`
	HostRetainTime int64  `json:"hostRetainTime"`
}

// MesosScalar, MesosRanges and MesosSet are the value kinds Mesos's attributes and
// resources share, as their Go types decode JSON.
type MesosScalar struct {
	Value *float64 `json:"value,omitempty"`
}

type MesosRanges struct {
	Range []*struct {
		Begin *uint64 `json:"begin,omitempty"`
		End   *uint64 `json:"end,omitempty"`
	} `json:"range,omitempty"`
}

type MesosSet struct {
	Item []string `json:"item,omitempty"`
}

// MesosAttribute is Mesos's protobuf Attribute as its Go type decodes JSON: pointers,
// the value type as the enum's number.
type MesosAttribute struct {
	Name   *string      `json:"name,omitempty"`
	Type   *int32       `json:"type,omitempty"`
	Scalar *MesosScalar `json:"scalar,omitempty"`
	Ranges *MesosRanges `json:"ranges,omitempty"`
	Set    *MesosSet    `json:"set,omitempty"`
	Text   *struct {
		Value *string `json:"value,omitempty"`
	} `json:"text,omitempty"`
}

// Resource is BCS's Resource (cores, MB).
type Resource struct{ Cpus, Mem, Disk float64 }

// TaskGroup is BCS's TaskGroup.
type TaskGroup struct {
	Kind, ID, Name, AppID, RunAs string
	ObjectMeta                   ObjectMeta
	AgentID, ExecutorID, Status  string
	LastStatus                   string
	InstanceID                   uint64
	Taskgroup                    []*Task
	KillPolicy                   *KillPolicy
	RestartPolicy                *RestartPolicy
	VersionName                  string
	LastUpdateTime               int64
	Attributes                   []*MesosAttribute
	StartTime, UpdateTime        int64
	ReschededTimes               int
	LastReschedTime              int64
	HostName, Message            string
	LaunchResource, CurrResource *Resource
	BcsEventMsg                  *json.RawMessage
}

// HealthCheck is BCS's HealthCheck.
type HealthCheck struct {
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

// Task is BCS's Task (its key Hostame as BCS spelt it).
type Task struct {
	Kind, ID, Name, Hostame, Command string
	Arguments                        []string
	Image, ImagePullUser             string
	ImagePullPasswd                  string
	Network, NetworkType             string
	PortMappings                     []*struct {
		ContainerPort, HostPort int32
		Name, Protocol          string
	}
	Privileged        bool
	Parameters        []*struct{ Key, Value string }
	ForcePullImage    bool
	Volumes           []*struct{ ContainerPath, HostPath, Mode string }
	Env               map[string]string
	Labels            map[string]string
	DataClass         *DataClass
	Cpuset            bool
	HealthChecks      []*HealthCheck
	HealthCheckStatus []*struct {
		Type    string `json:"type"`
		Result  bool   `json:"result"`
		Message string `json:"message"`
	}
	Healthy, IsChecked                              bool
	ConsecutiveFailureTimes                         uint32
	LocalMaxConsecutiveFailures                     uint32
	OfferId, AgentId, AgentHostname, AgentIPAddress string
	Status, LastStatus                              string
	UpdateTime                                      int64
	StatusData, AppId, RunAs                        string
	KillPolicy                                      *KillPolicy
	Uris                                            []string
	LastUpdateTime                                  int64
	Message                                         string
	NetLimit                                        *NetLimit
}

// Version is BCS's Version; its raw_json is the definition as BCS's clients wrote it.
type Version struct {
	ID, Name                  string
	ObjectMeta, PodObjectMeta ObjectMeta
	Instances                 int32
	RunAs                     string
	Container, Process        []*json.RawMessage
	Labels                    map[string]string
	KillPolicy                *KillPolicy
	RestartPolicy             *RestartPolicy
	Constraints               *json.RawMessage
	Uris, Ip                  []string
	Mode, Kind                string
	RawJson                   *json.RawMessage `json:"raw_json,omitempty"`
}

// AgentSetting is BCS's BcsClusterAgentSetting.
type AgentSetting struct {
	InnerIP     string `json:"innerIP"`
	Disabled    bool   `json:"disabled"`
	AttrStrings map[string]struct {
		Value string `json:"value"`
	} `json:"strings"`
	AttrScalars map[string]struct {
		Value float64 `json:"value"`
	} `json:"scalars"`
	NoSchedule        map[string]string           `json:"noSchedule"`
	Pods              []string                    `json:"pods"`
	ExtendedResources map[string]*json.RawMessage `json:"ExtendedResources"`
}

// DataClass is BCS's DataClass.
type DataClass struct {
	Resources, LimitResources *Resource
	ExtendedResources         []*struct {
		Name  string  `json:"name"`
		Value float64 `json:"value"`
	}
	Msgs     []*json.RawMessage
	NetLimit *NetLimit
	ProcInfo *ProcDef
}

// NetLimit is BCS's NetLimit.
type NetLimit struct {
	EgressLimit int `json:"egressLimit"`
}

// ProcDef is BCS's ProcDef; its Uri has no JSON tags.
type ProcDef struct {
	ProcName   string `json:"procName"`
	WorkPath   string `json:"workPath"`
	PidFile    string `json:"pidFile"`
	StartCmd   string `json:"startCmd"`
	CheckCmd   string `json:"checkCmd"`
	StopCmd    string `json:"stopCmd"`
	RestartCmd string `json:"restartCmd"`
	ReloadCmd  string `json:"reloadCmd"`
	KillCmd    string `json:"killCmd"`
	LogPath    string `json:"logPath"`
	CfgPath    string `json:"cfgPath"`
	Uris       []*struct {
		Value, User, Pwd, OutputDir string
	} `json:"uris"`
	StartGracePeriod int `json:"startGracePeriod"`
}

// DeploymentApp is BCS's DeploymentReferApplication: its third key is untagged.
type DeploymentApp struct {
	ApplicationName         string `json:"name"`
	CurrentTargetInstances  int    `json:"curr_target_instances"`
	CurrentRollingInstances int
}

// Deployment is the scheduler's Deployment.
type Deployment struct {
	ObjectMeta ObjectMeta        `json:"metadata"`
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
	Status          string           `json:"status"`
	Application     *DeploymentApp   `json:"application"`
	ApplicationExt  *DeploymentApp   `json:"application_ext"`
	LastRollingTime int64            `json:"last_rolling_time"`
	CurrRollingOp   string           `json:"curr_rolling_operation"`
	IsInRolling     bool             `json:"is_in_rolling"`
	CheckTime       int64            `json:"check_time"`
	Message         string           `json:"message"`
	RawJson         *json.RawMessage `json:"raw_json"`
	RawJsonBackup   *json.RawMessage `json:"raw_json_backup"`
}

// AgentAttribute is BCS's BcsAgentAttribute (type 101 scalar, 102 ranges, 103 text, 104 set).
type AgentAttribute struct {
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

// ClusterResource is BCS's BcsClusterResource.
type ClusterResource struct {
	DiskTotal float64 `json:"disktotal"`
	MemTotal  float64 `json:"memtotal"`
	CPUTotal  float64 `json:"cputotal"`
	DiskUsed  float64 `json:"diskused"`
	MemUsed   float64 `json:"memused"`
	CPUUsed   float64 `json:"cpuused"`
	Agents    []struct {
		HostName         string            `json:"hostname"`
		IP               string            `json:"ip"`
		DiskTotal        float64           `json:"disktotal"`
		MemTotal         float64           `json:"memtotal"`
		CPUTotal         float64           `json:"cputotal"`
		DiskUsed         float64           `json:"diskused"`
		MemUsed          float64           `json:"memused"`
		CPUUsed          float64           `json:"cpuused"`
		Disabled         bool              `json:"disabled"`
		HostAttributes   []*AgentAttribute `json:"host_attributes"`
		Attributes       []*AgentAttribute `json:"attributes"`
		RegisteredTime   int64             `json:"registered_time"`
		ReRegisteredTime int64             `json:"reregistered_time"`
	} `json:"agents"`
}

// Decode decodes data into one of these types as BCS's clients did, failing on a value
// of another JSON type; it then fails on any key the type lacks, so a misspelt key
// cannot pass unseen (BCS's clients ignored such keys).
func Decode(data []byte, into any) error {
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("BCS's types do not decode it: %w", err)
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(into); err != nil {
		return fmt.Errorf("a key BCS's type lacks: %w", err)
	}
	return nil
}
