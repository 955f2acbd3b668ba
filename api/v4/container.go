package v4

// Container is one task of an application pod, run by the Docker driver.
type Container struct {
	Name            string         `json:"name,omitempty"`
	Hostname        string         `json:"hostname,omitempty"`
	Type            string         `json:"type,omitempty"`
	Image           string         `json:"image"`
	ImagePullUser   string         `json:"imagePullUser,omitempty"`
	ImagePullPasswd string         `json:"imagePullPasswd,omitempty"`
	ImagePullPolicy string         `json:"imagePullPolicy,omitempty"`
	Privileged      bool           `json:"privileged,omitempty"`
	Command         string         `json:"command,omitempty"`
	Args            []string       `json:"args,omitempty"`
	Parameters      []Parameter    `json:"parameters,omitempty"`
	Env             []EnvVar       `json:"env,omitempty"`
	WorkingDir      string         `json:"workingDir,omitempty"`
	Ports           []Port         `json:"ports,omitempty"`
	HealthChecks    []HealthCheck  `json:"healthChecks,omitempty"`
	Resources       *Resources     `json:"resources,omitempty"`
	Volumes         []Volume       `json:"volumes,omitempty"`
	ConfigMaps      []ConfigMapRef `json:"configmaps,omitempty"`
	Secrets         []SecretRef    `json:"secrets,omitempty"`
	Lifecycle       *Lifecycle     `json:"lifecycle,omitempty"`

	// ImagePullSecrets name secrets of the pod's namespace of type
	// SecretTypeDockerConfigJSON, whose entry for the image's registry the image is
	// pulled with (docs/docker.md, "Images and registries").
	ImagePullSecrets []LocalObjectReference `json:"imagePullSecrets,omitempty"`
}

// Image pull policies: Always pulls at every start, IfNotPresent only a missing image,
// Never uses the node's image (a start without it fails).
const (
	PullAlways       = "Always"
	PullIfNotPresent = "IfNotPresent"
	PullNever        = "Never"
)

// LocalObjectReference names an object of the referrer's namespace.
type LocalObjectReference struct {
	Name string `json:"name"`
}

// Parameter is a docker run option (key without dashes, e.g. "ulimit", "shm-size").
type Parameter struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// EnvVar is one environment variable, given literally or from the task's resources.
type EnvVar struct {
	Name      string        `json:"name"`
	Value     string        `json:"value,omitempty"`
	ValueFrom *EnvVarSource `json:"valueFrom,omitempty"`
}

// EnvVarSource takes a value from elsewhere.
type EnvVarSource struct {
	ResourceFieldRef *ResourceFieldRef `json:"resourceFieldRef,omitempty"`
}

// ResourceFieldRef names requests.cpu, limits.cpu (millicores), requests.memory or limits.memory (MB).
type ResourceFieldRef struct {
	Resource string `json:"resource"`
}

// Port is a container or process port. For containers in HOST mode containerPort 0 means
// a random port; in BRIDGE mode hostPort 0 means a random host port. For processes hostPort
// 0 means random and -1 no host port (docs/spec.md "Ports").
type Port struct {
	Name          string `json:"name"`
	ContainerPort int    `json:"containerPort,omitempty"`
	HostPort      int    `json:"hostPort,omitempty"`
	Protocol      string `json:"protocol,omitempty"`
}

// Resources are what a task asks for (requests, used to schedule) and may use (limits).
type Resources struct {
	Requests          *ResourceList      `json:"requests,omitempty"`
	Limits            *ResourceList      `json:"limits,omitempty"`
	ExtendedResources []ExtendedResource `json:"extendedResources,omitempty"`
}

// ResourceList holds cpu in cores, memory and storage in MB, as strings like BCS
// ("0.5", "512"); numbers are accepted too. "-1" means unlimited (processes).
type ResourceList struct {
	CPU     Quantity `json:"cpu,omitempty"`
	Memory  Quantity `json:"memory,omitempty"`
	Storage Quantity `json:"storage,omitempty"`
}

// Quantity is a decimal number written as a string; the decoder also takes a JSON number.
type Quantity string

// ExtendedResource is a counted device resource such as "bkbcs/cpuset" or a GPU share.
type ExtendedResource struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// Volume mounts a host path, or a directory the node's agent keeps for the instance, into
// a container.
type Volume struct {
	Name   string      `json:"name,omitempty"`
	Volume VolumeMount `json:"volume"`
}

// VolumeMount is the host and container side of a volume.
type VolumeMount struct {
	HostPath  string `json:"hostPath,omitempty"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
	// Instance, berth's own, mounts a directory the node's agent keeps for this instance
	// of the workload and this container (Lain deployd's Volumes): the agent picks the
	// host side under its data dir, so it needs no host-path privilege; the directory
	// outlives restarts of the instance on the node and goes with the instance
	// (docs/agent.md, "Instance volumes"). It takes no hostPath.
	Instance bool `json:"instance,omitempty"`
	// PodVolume, berth's own, mounts the pod's volume of that name (PodSpec.Volumes); it
	// takes no hostPath. For a process, MountPath is relative to its work directory,
	// where the agent links the volume's directory (docs/pods.md, "Volumes").
	PodVolume string `json:"podVolume,omitempty"`
}

// MaxInstanceVolumes bounds a container's instance volumes: each is a directory the agent
// creates on the node.
const MaxInstanceVolumes = 16

// MaxMountPathLen bounds a mount path (Linux's PATH_MAX is 4096; an instance volume's
// path also names its directory on the node).
const MaxMountPathLen = 1024
