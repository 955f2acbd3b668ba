package v4

// PodVolume is a volume of the pod, which its containers and processes mount by name
// (VolumeMount.PodVolume; docs/pods.md, "Volumes"). Exactly one source is set.
type PodVolume struct {
	Name       string           `json:"name"`
	EmptyDir   *EmptyDirVolume  `json:"emptyDir,omitempty"`
	ConfigMap  *ConfigMapVolume `json:"configMap,omitempty"`
	Secret     *SecretVolume    `json:"secret,omitempty"`
	FlexVolume *FlexVolume      `json:"flexVolume,omitempty"`
	// CSI claims a volume object; CSIPlugin is a CSI plugin's socket directory
	// (csi_wire.go).
	CSI       *CSIVolumeSource `json:"csi,omitempty"`
	CSIPlugin *CSIPluginSource `json:"csiPlugin,omitempty"`
}

// EmptyDirVolume is a directory the pod's tasks share, created empty when the pod starts
// and removed with the pod: on the node's disk, or in memory (tmpfs) with Medium
// "Memory", whose size limit counts in the pod's memory.
type EmptyDirVolume struct {
	Medium string `json:"medium,omitempty"`
	// SizeLimit is the volume's size in MB: the tmpfs's size in memory (required
	// there); on disk, a volume past it fails the pod.
	SizeLimit Quantity `json:"sizeLimit,omitempty"`
}

// EmptyDir media.
const (
	MediumDisk   = ""
	MediumMemory = "Memory"
)

// ConfigMapVolume holds a configmap's keys as files. Its files follow updates of the
// configmap, swapped in at once as the kubelet does, unless Static.
type ConfigMapVolume struct {
	Name string `json:"name"`
	// Items select keys and name their files; empty is every key, each file named by it.
	Items []KeyToPath `json:"items,omitempty"`
	// DefaultMode is the files' mode (0644 when unset).
	DefaultMode *int `json:"defaultMode,omitempty"`
	// Static writes the files once, when the pod starts.
	Static bool `json:"static,omitempty"`
}

// SecretVolume holds a secret's keys as files, as ConfigMapVolume does a configmap's
// (mode 0400 when unset).
type SecretVolume struct {
	SecretName  string      `json:"secretName"`
	Items       []KeyToPath `json:"items,omitempty"`
	DefaultMode *int        `json:"defaultMode,omitempty"`
	Static      bool        `json:"static,omitempty"`
}

// KeyToPath puts a key of a configmap or secret in the file Path (relative to the
// volume), with Mode when set.
type KeyToPath struct {
	Key  string `json:"key"`
	Path string `json:"path"`
	Mode *int   `json:"mode,omitempty"`
}

// FlexVolume is a volume a FlexVolume driver installed on the node mounts (Kubernetes'
// FlexVolume call convention; docs/pods.md, "FlexVolume").
type FlexVolume struct {
	// Driver is "vendor/driver": the agent runs
	// <volume plugin dir>/vendor~driver/driver.
	Driver   string `json:"driver"`
	FSType   string `json:"fsType,omitempty"`
	ReadOnly bool   `json:"readOnly,omitempty"`
	// SecretRef names a secret of the pod's namespace whose keys the driver gets among
	// its options (base64, as the kubelet passes them).
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	Options   map[string]string     `json:"options,omitempty"`
}

// Bounds of pod volumes.
const (
	MaxPodVolumes     = 32
	MaxVolumeItems    = 256
	MaxFlexOptions    = 64
	MaxFlexOptionSize = 4096
)
