package v4

// KindVolume names CSI volumes: storage a Container Storage Interface plugin provides,
// created by the plugin's controller (or an existing one named by its external ID), and
// later staged and published on the nodes of the task groups that claim it. The model is
// Nomad's CSI volume (docs/volumes.md).
const KindVolume Kind = "volume"

// The access modes of a volume: who may mount it at once (Nomad's names for CSI's modes).
const (
	AccessSingleNodeReader      = "single-node-reader-only"
	AccessSingleNodeWriter      = "single-node-writer"
	AccessMultiNodeReader       = "multi-node-reader-only"
	AccessMultiNodeSingleWriter = "multi-node-single-writer"
	AccessMultiNodeMultiWriter  = "multi-node-multi-writer"
)

// AccessModes lists the access modes a volume may have.
func AccessModes() []string {
	return []string{AccessSingleNodeReader, AccessSingleNodeWriter, AccessMultiNodeReader,
		AccessMultiNodeSingleWriter, AccessMultiNodeMultiWriter}
}

// The attachment modes of a volume: a mounted file system or a raw block device.
const (
	AttachFileSystem  = "file-system"
	AttachBlockDevice = "block-device"
)

// The phases of a volume's status.
const (
	VolumePending   = "Pending"
	VolumeCreating  = "Creating"
	VolumeAvailable = "Available"
	VolumeDeleting  = "Deleting"
	VolumeError     = "Error"
)

// CSIVolume is a volume object (kind "volume").
type CSIVolume struct {
	TypeMeta
	Metadata ObjectMeta `json:"metadata"`
	Spec     VolumeSpec `json:"spec"`
	// Status is written by berth; what users send is ignored.
	Status VolumeStatus `json:"status,omitzero"`
}

// GetMeta returns the object's metadata.
func (v *CSIVolume) GetMeta() *ObjectMeta { return &v.Metadata }

// VolumeSpec says which plugin provides the volume and how it is used.
type VolumeSpec struct {
	// Plugin is the CSI plugin's name (its GetPluginInfo name, "hostpath.csi.k8s.io").
	Plugin string `json:"plugin"`
	// ExternalID registers a volume that already exists in the storage provider; empty
	// asks the plugin's controller to create one of Capacity.
	ExternalID string `json:"externalID,omitempty"`
	// Capacity bounds the size of a volume to create.
	Capacity *VolumeCapacity `json:"capacity,omitempty"`
	// AccessMode is one of AccessModes(); default single-node-writer.
	AccessMode string `json:"accessMode,omitempty"`
	// AttachmentMode is file-system (default) or block-device.
	AttachmentMode string `json:"attachmentMode,omitempty"`
	// MountOptions apply to a file-system volume.
	MountOptions *VolumeMountOptions `json:"mountOptions,omitempty"`
	// Topology constrains where the volume is created and so which nodes may use it.
	Topology *VolumeTopologyRequest `json:"topology,omitempty"`
	// Parameters are passed to the plugin's CreateVolume as they are.
	Parameters map[string]string `json:"parameters,omitempty"`
	// Secrets names a secret of the volume's namespace whose items are passed to the
	// plugin's calls as CSI secrets.
	Secrets *VolumeSecretsRef `json:"secrets,omitempty"`
}

// VolumeCapacity is a size range ("1G", "500Mi"); either end may be empty.
type VolumeCapacity struct {
	Min string `json:"min,omitempty"`
	Max string `json:"max,omitempty"`
}

// VolumeMountOptions are the file system type and mount flags of a file-system volume.
type VolumeMountOptions struct {
	FSType string   `json:"fsType,omitempty"`
	Flags  []string `json:"flags,omitempty"`
}

// VolumeTopologyRequest lists the topologies the volume must be accessible from
// (Required, any one of them) and those it should be (Preferred, in order).
type VolumeTopologyRequest struct {
	Required  []VolumeTopology `json:"required,omitempty"`
	Preferred []VolumeTopology `json:"preferred,omitempty"`
}

// VolumeTopology is one topology: segments such as {"topology.hostpath.csi/node": "n1"}.
type VolumeTopology struct {
	Segments map[string]string `json:"segments"`
}

// VolumeSecretsRef names a secret in the volume's namespace.
type VolumeSecretsRef struct {
	Name string `json:"name"`
}

// VolumeStatus is what berth knows of the volume.
type VolumeStatus struct {
	Phase string `json:"phase,omitempty"`
	// UID names this volume object (not an earlier one of the same name) to its plugin:
	// CreateVolume's idempotency name, chosen by berth before its first call and kept, so
	// a call repeated after a failure or by a new leader finds the same volume.
	UID string `json:"uid,omitempty"`
	// ExternalID is the plugin's ID of the volume once created (or Spec.ExternalID).
	ExternalID string `json:"externalID,omitempty"`
	// Capacity is the volume's size in bytes as the plugin reported it (0: unknown).
	Capacity int64 `json:"capacity,omitempty"`
	// Topology lists where the volume is accessible, as the plugin reported it.
	Topology []VolumeTopology `json:"topology,omitempty"`
	// Context is the volume context CreateVolume returned, passed to every later call.
	Context map[string]string `json:"context,omitempty"`
	// Claims are the task groups using the volume.
	Claims  []VolumeClaim `json:"claims,omitempty"`
	Message string        `json:"message,omitempty"`
}

// VolumeClaim is one task group's use of a volume on a node.
type VolumeClaim struct {
	TaskGroup string `json:"taskgroup"`
	Node      string `json:"node"`
	// Mode is "read" or "write".
	Mode string `json:"mode"`
	// NodeID is the plugin's ID of the node; PublishContext is what ControllerPublish
	// returned for it.
	NodeID         string            `json:"nodeID,omitempty"`
	PublishContext map[string]string `json:"publishContext,omitempty"`
}
