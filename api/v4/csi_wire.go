package v4

// CSI integration types (docs/volumes.md) shared by the server, the agent, the scheduler
// and clients: the plugins a node's agent found, a pod's claim of a volume object, the
// agent protocol's claim and release, and the controller calls the server asks the agent
// that hosts a controller plugin to make.

// CSIPlugin is one CSI plugin as a node's agent found it in its plugin directory
// (NodeStatus.CSIPlugins): what the plugin's identity and node services said.
type CSIPlugin struct {
	// Name is the plugin's GetPluginInfo name ("hostpath.csi.k8s.io").
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	// Controller and Node tell which services the plugin offers on this node.
	Controller bool `json:"controller,omitempty"`
	Node       bool `json:"node,omitempty"`
	// NodeID is NodeGetInfo's ID of this node, which ControllerPublish needs.
	NodeID string `json:"nodeID,omitempty"`
	// MaxVolumes is how many volumes the plugin publishes on this node at most (0: no
	// limit).
	MaxVolumes int64 `json:"maxVolumes,omitempty"`
	// Topology is the node's accessible topology as the plugin reports it; a volume whose
	// accessible topology has no entry matching it cannot be used on this node.
	Topology map[string]string `json:"topology,omitempty"`
	// ControllerCapabilities and NodeCapabilities are the plugin's capabilities in
	// berth's words: CSIPublishUnpublish, CSICreateDelete, CSIStageUnstage.
	ControllerCapabilities []string `json:"controllerCapabilities,omitempty"`
	NodeCapabilities       []string `json:"nodeCapabilities,omitempty"`
	// Healthy is the result of the last Probe; Message says why not.
	Healthy bool   `json:"healthy"`
	Message string `json:"message,omitempty"`
}

// Capability names in CSIPlugin.
const (
	CSICreateDelete     = "create-delete"
	CSIPublishUnpublish = "publish-unpublish"
	CSIStageUnstage     = "stage-unstage"
)

// MaxCSIPlugins bounds the plugins one node reports.
const MaxCSIPlugins = 32

// AgentCSIPlugins is the body of PUT /v1/agent/nodes/{name}/csiplugins: the whole list,
// sent when it changed.
type AgentCSIPlugins struct {
	Plugins []CSIPlugin `json:"plugins"`
}

// CSIVolumeSource is a pod volume backed by a volume object of the pod's namespace: the
// agent stages and publishes it on the node and the pod's tasks mount the published
// directory (or device).
type CSIVolumeSource struct {
	// Volume names the volume object (kind volume) in the pod's namespace.
	Volume string `json:"volume"`
	// ReadOnly claims the volume for reading only; reader-only access modes require it.
	ReadOnly bool `json:"readOnly,omitempty"`
}

// CSIPluginSource is a pod volume for the task groups that run a CSI plugin: the
// plugin's socket directory on the node, <csi plugin dir>/<name>, where the plugin
// listens on csi.sock and where the agent finds it. A process gets it through the
// CSI_ENDPOINT variable as well. Only a namespace granted the csi-plugin privilege may use
// it.
type CSIPluginSource struct {
	Name string `json:"name"`
}

// CSIClaimRequest is the body of POST /v1/agent/volumes/claim and
// /v1/agent/volumes/release: a task group on the calling node claiming (or releasing) a
// volume it names in its pod's volumes.
type CSIClaimRequest struct {
	Namespace string `json:"namespace"`
	Volume    string `json:"volume"`
	// TaskGroup is the claiming task group's name in Namespace.
	TaskGroup string `json:"taskgroup"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

// CSIClaimGrant answers a claim: what the agent needs for NodeStage and NodePublish.
type CSIClaimGrant struct {
	Plugin         string              `json:"plugin"`
	ExternalID     string              `json:"externalID"`
	AccessMode     string              `json:"accessMode"`
	AttachmentMode string              `json:"attachmentMode"`
	MountOptions   *VolumeMountOptions `json:"mountOptions,omitempty"`
	// Context is the volume context CreateVolume returned; PublishContext is what
	// ControllerPublish returned for this node (empty for a plugin without it).
	Context        map[string]string `json:"context,omitempty"`
	PublishContext map[string]string `json:"publishContext,omitempty"`
	// Secrets are the items of the volume's secret, for the node calls.
	Secrets map[string]string `json:"secrets,omitempty"`
}

// CSI controller operations (CSIControllerRequest.Op).
const (
	CSIOpCreate    = "create"
	CSIOpDelete    = "delete"
	CSIOpValidate  = "validate"
	CSIOpPublish   = "publish"
	CSIOpUnpublish = "unpublish"
)

// CSIControllerRequest is the body of POST /v1/csi/controller on an agent: the server
// asking the agent of a node that hosts Plugin's controller service to make one call.
type CSIControllerRequest struct {
	Plugin string `json:"plugin"`
	Op     string `json:"op"`
	// Name is CreateVolume's idempotency name (the volume object's UID).
	Name string `json:"name,omitempty"`
	// VolumeID is the plugin's ID of the volume (every op but create).
	VolumeID       string                 `json:"volumeID,omitempty"`
	MinBytes       int64                  `json:"minBytes,omitempty"`
	MaxBytes       int64                  `json:"maxBytes,omitempty"`
	AccessMode     string                 `json:"accessMode,omitempty"`
	AttachmentMode string                 `json:"attachmentMode,omitempty"`
	MountOptions   *VolumeMountOptions    `json:"mountOptions,omitempty"`
	Topology       *VolumeTopologyRequest `json:"topology,omitempty"`
	Parameters     map[string]string      `json:"parameters,omitempty"`
	Context        map[string]string      `json:"context,omitempty"`
	Secrets        map[string]string      `json:"secrets,omitempty"`
	// NodeID and ReadOnly are publish's and unpublish's.
	NodeID   string `json:"nodeID,omitempty"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// CSIControllerReply is what the call returned.
type CSIControllerReply struct {
	VolumeID       string            `json:"volumeID,omitempty"`
	Capacity       int64             `json:"capacity,omitempty"`
	Context        map[string]string `json:"context,omitempty"`
	Topology       []VolumeTopology  `json:"topology,omitempty"`
	PublishContext map[string]string `json:"publishContext,omitempty"`
}
