package csi

import (
	"context"
	"fmt"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// ControllerCapabilities are the controller RPCs a plugin implements.
type ControllerCapabilities struct {
	CreateDelete     bool
	PublishUnpublish bool
	ListVolumes      bool
	GetCapacity      bool
	ExpandVolume     bool
}

// ControllerCapabilities asks the plugin's controller service what it implements.
func (c *Client) ControllerCapabilities(ctx context.Context) (ControllerCapabilities, error) {
	r, err := call(ctx, c, "ControllerGetCapabilities", probeTimeout, func(ctx context.Context) (*csipb.ControllerGetCapabilitiesResponse, error) {
		return c.controller.ControllerGetCapabilities(ctx, &csipb.ControllerGetCapabilitiesRequest{})
	})
	if err != nil {
		return ControllerCapabilities{}, err
	}
	var cc ControllerCapabilities
	for _, cap := range r.GetCapabilities() {
		switch cap.GetRpc().GetType() {
		case csipb.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME:
			cc.CreateDelete = true
		case csipb.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME:
			cc.PublishUnpublish = true
		case csipb.ControllerServiceCapability_RPC_LIST_VOLUMES:
			cc.ListVolumes = true
		case csipb.ControllerServiceCapability_RPC_GET_CAPACITY:
			cc.GetCapacity = true
		case csipb.ControllerServiceCapability_RPC_EXPAND_VOLUME:
			cc.ExpandVolume = true
		}
	}
	return cc, nil
}

// CreateRequest asks for a new volume. Name is berth's idempotency key: asking twice
// with the same name gives the same volume (the spec's rule).
type CreateRequest struct {
	Name string
	// MinBytes and MaxBytes bound the capacity; 0 leaves that end open.
	MinBytes, MaxBytes int64
	Capability         Capability
	// Required: the volume must be accessible from one of these; Preferred: in order.
	Required, Preferred []Topology
	Parameters          map[string]string
	Secrets             map[string]string
}

// Volume is a volume as the plugin describes it.
type Volume struct {
	ID            string
	CapacityBytes int64
	Context       map[string]string
	Topology      []Topology
}

// CreateVolume asks the plugin's controller for a volume.
func (c *Client) CreateVolume(ctx context.Context, req CreateRequest) (Volume, error) {
	const name = "CreateVolume"
	if req.Name == "" {
		return Volume{}, c.misuse(name, codes.InvalidArgument, "a volume name is required")
	}
	if req.MaxBytes > 0 && req.MinBytes > req.MaxBytes {
		return Volume{}, c.misuse(name, codes.InvalidArgument, "minimum capacity %d exceeds the maximum %d", req.MinBytes, req.MaxBytes)
	}
	vc, err := req.Capability.proto()
	if err != nil {
		return Volume{}, c.misuse(name, codes.InvalidArgument, "%v", err)
	}
	pb := &csipb.CreateVolumeRequest{
		Name:               req.Name,
		VolumeCapabilities: []*csipb.VolumeCapability{vc},
		Parameters:         req.Parameters,
		Secrets:            req.Secrets,
	}
	if req.MinBytes > 0 || req.MaxBytes > 0 {
		pb.CapacityRange = &csipb.CapacityRange{RequiredBytes: req.MinBytes, LimitBytes: req.MaxBytes}
	}
	if len(req.Required) > 0 || len(req.Preferred) > 0 {
		pb.AccessibilityRequirements = &csipb.TopologyRequirement{
			Requisite: topologiesProto(req.Required), Preferred: topologiesProto(req.Preferred),
		}
	}
	r, err := call(ctx, c, name, 0, func(ctx context.Context) (*csipb.CreateVolumeResponse, error) {
		return c.controller.CreateVolume(ctx, pb)
	})
	if err != nil {
		return Volume{}, err
	}
	v := r.GetVolume()
	if v.GetVolumeId() == "" {
		return Volume{}, c.misuse(name, codes.Internal, "the plugin returned a volume without an ID")
	}
	return Volume{ID: v.GetVolumeId(), CapacityBytes: v.GetCapacityBytes(), Context: v.GetVolumeContext(),
		Topology: topologiesOf(v.GetAccessibleTopology())}, nil
}

// DeleteVolume asks the plugin's controller to delete a volume. Deleting one that is
// already gone succeeds (the spec makes it idempotent).
func (c *Client) DeleteVolume(ctx context.Context, id string, secrets map[string]string) error {
	if id == "" {
		return c.misuse("DeleteVolume", codes.InvalidArgument, "a volume ID is required")
	}
	_, err := call(ctx, c, "DeleteVolume", 0, func(ctx context.Context) (*csipb.DeleteVolumeResponse, error) {
		return c.controller.DeleteVolume(ctx, &csipb.DeleteVolumeRequest{VolumeId: id, Secrets: secrets})
	})
	return err
}

// ValidateCapability asks whether the volume supports the capability: nil when it does,
// an error with the plugin's message when it does not.
func (c *Client) ValidateCapability(ctx context.Context, id string, capability Capability, volumeContext, secrets map[string]string) error {
	const name = "ValidateVolumeCapabilities"
	vc, err := capability.proto()
	if err != nil {
		return c.misuse(name, codes.InvalidArgument, "%v", err)
	}
	r, err := call(ctx, c, name, 0, func(ctx context.Context) (*csipb.ValidateVolumeCapabilitiesResponse, error) {
		return c.controller.ValidateVolumeCapabilities(ctx, &csipb.ValidateVolumeCapabilitiesRequest{
			VolumeId: id, VolumeCapabilities: []*csipb.VolumeCapability{vc}, VolumeContext: volumeContext, Secrets: secrets,
		})
	})
	if err != nil {
		return err
	}
	if r.GetConfirmed() == nil {
		return c.misuse(name, codes.FailedPrecondition, "capability not supported: %s", r.GetMessage())
	}
	return nil
}

// PublishRequest attaches a volume to a node (ControllerPublishVolume).
type PublishRequest struct {
	VolumeID   string
	NodeID     string
	Capability Capability
	Context    map[string]string
	Secrets    map[string]string
	// ReadOnly publishes read-only even for a writer access mode (a claim for reading).
	ReadOnly bool
}

// ControllerPublish attaches the volume to the node and returns the publish context the
// node calls need. A plugin without PUBLISH_UNPUBLISH_VOLUME needs no attaching: the
// call is skipped and the context is nil.
func (c *Client) ControllerPublish(ctx context.Context, req PublishRequest) (map[string]string, error) {
	const name = "ControllerPublishVolume"
	caps, err := c.ControllerCapabilities(ctx)
	if err != nil || !caps.PublishUnpublish {
		return nil, err
	}
	if req.VolumeID == "" || req.NodeID == "" {
		return nil, c.misuse(name, codes.InvalidArgument, "a volume ID and a node ID are required")
	}
	vc, err := req.Capability.proto()
	if err != nil {
		return nil, c.misuse(name, codes.InvalidArgument, "%v", err)
	}
	r, err := call(ctx, c, name, 0, func(ctx context.Context) (*csipb.ControllerPublishVolumeResponse, error) {
		return c.controller.ControllerPublishVolume(ctx, &csipb.ControllerPublishVolumeRequest{
			VolumeId: req.VolumeID, NodeId: req.NodeID, VolumeCapability: vc, Readonly: req.Capability.ReadOnly() || req.ReadOnly,
			VolumeContext: req.Context, Secrets: req.Secrets,
		})
	})
	if err != nil {
		return nil, err
	}
	return r.GetPublishContext(), nil
}

// ControllerUnpublish detaches the volume from the node; skipped, like ControllerPublish,
// for a plugin without PUBLISH_UNPUBLISH_VOLUME.
func (c *Client) ControllerUnpublish(ctx context.Context, volumeID, nodeID string, secrets map[string]string) error {
	caps, err := c.ControllerCapabilities(ctx)
	if err != nil || !caps.PublishUnpublish {
		return err
	}
	_, err = call(ctx, c, "ControllerUnpublishVolume", 0, func(ctx context.Context) (*csipb.ControllerUnpublishVolumeResponse, error) {
		return c.controller.ControllerUnpublishVolume(ctx, &csipb.ControllerUnpublishVolumeRequest{
			VolumeId: volumeID, NodeId: nodeID, Secrets: secrets,
		})
	})
	return err
}

// String names the capabilities, for logs and messages.
func (cc ControllerCapabilities) String() string {
	return fmt.Sprintf("create-delete=%t publish-unpublish=%t list=%t capacity=%t expand=%t",
		cc.CreateDelete, cc.PublishUnpublish, cc.ListVolumes, cc.GetCapacity, cc.ExpandVolume)
}
