package deployd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// deployd's specs, as its clients send them: Go's field names as keys (deployd's types
// had no JSON tags but HealthConfig's), matched in any case as encoding/json does.
// Unknown keys are refused, where deployd dropped them, so that a typo is not silently
// lost.

// imSpec is embedded in deployd's three specs.
type imSpec struct {
	Name      string
	Namespace string
	Version   int
	CreatedAt time.Time
	UpdatedAt time.Time
}

// PodGroupSpec is a pod group: NumInstances copies of Pod.
type PodGroupSpec struct {
	imSpec
	Pod           PodSpec
	NumInstances  int
	RestartPolicy int // 0 Never, 1 Always, 2 OnFail
}

// PodSpec is one instance: its containers and how they are placed and checked.
type PodSpec struct {
	imSpec
	Network      string
	Containers   []ContainerSpec
	Filters      []string // Swarm filters: constraint:node==X, constraint:node!=X
	Labels       map[string]string
	Dependencies []Dependency
	Annotation   string
	Stateful     bool
	SetupTime    int
	KillTimeout  int
	PrevState    PodPrevState
	HealthConfig HealthConfig `json:"HealthConfig"`
}

// PodPrevState is where the pod ran last.
type PodPrevState struct {
	NodeName string
	IPs      []string
}

// HealthConfig is the pod's health check command.
type HealthConfig struct {
	Cmd     string        `json:"cmd"`
	Options HealthOptions `json:"options"`
}

// HealthOptions are the check's timing: seconds, seconds, failures.
type HealthOptions struct {
	Interval int `json:"interval"`
	Timeout  int `json:"timeout"`
	Retries  int `json:"retries"`
}

// ContainerSpec is one container of the pod.
type ContainerSpec struct {
	imSpec
	Image         string
	Env           []string
	User          string
	WorkingDir    string
	DnsSearch     []string
	Volumes       []string
	SystemVolumes []string
	CloudVolumes  []CloudVolumeSpec
	Command       []string
	Entrypoint    []string
	CpuLimit      int
	MemoryLimit   int64
	Expose        int
	LogConfig     LogConfig
}

// CloudVolumeSpec is a shared (cloud) volume's directories.
type CloudVolumeSpec struct {
	Type string
	Dirs []string
}

// LogConfig is a Docker logging driver.
type LogConfig struct {
	Type   string
	Config map[string]string
}

// Dependency names a dependency pod and how it is shared: 0 per namespace, 1 per node.
type Dependency struct {
	PodName string
	Policy  int
}

// RestartPolicy values.
const (
	RestartNever  = 0
	RestartAlways = 1
	RestartOnFail = 2
)

// decodeStrict decodes one JSON value into v, refusing unknown keys and trailing data.
func decodeStrict(body []byte, v any, what string) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("the body is not a %s: %w", what, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("the body holds more than one JSON value")
	}
	return nil
}
