package csitest

import (
	"context"
	"errors"
	"os"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// defaultCapacity is a volume's size when the request gives no range.
const defaultCapacity = 1 << 30

// publishContextKey is what ControllerPublish returns and NodeStage requires when the
// plugin has the publish capability: proof that the CO passed the publish context on.
const publishContextKey = "csitest.berth.io/published-to"

// ControllerGetCapabilities offers create/delete, and publish/unpublish when asked to.
func (p *Plugin) ControllerGetCapabilities(context.Context, *csipb.ControllerGetCapabilitiesRequest) (*csipb.ControllerGetCapabilitiesResponse, error) {
	rpc := func(t csipb.ControllerServiceCapability_RPC_Type) *csipb.ControllerServiceCapability {
		return &csipb.ControllerServiceCapability{Type: &csipb.ControllerServiceCapability_Rpc{Rpc: &csipb.ControllerServiceCapability_RPC{Type: t}}}
	}
	caps := []*csipb.ControllerServiceCapability{rpc(csipb.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)}
	if p.opts.ControllerPublish {
		caps = append(caps, rpc(csipb.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME))
	}
	return &csipb.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

// checkCapabilities refuses what this plugin cannot serve: block volumes.
func checkCapabilities(caps []*csipb.VolumeCapability) error {
	if len(caps) == 0 {
		return status.Error(codes.InvalidArgument, "volume_capabilities: required")
	}
	for _, c := range caps {
		if c.GetBlock() != nil {
			return status.Error(codes.InvalidArgument, "volume_capabilities: csitest serves file-system volumes only")
		}
		if c.GetMount() == nil || c.GetAccessMode() == nil {
			return status.Error(codes.InvalidArgument, "volume_capabilities: an access type and an access mode are required")
		}
	}
	return nil
}

// CreateVolume makes a directory volume; the same name gives the same volume, and a
// different size for an existing name is ALREADY_EXISTS, as the spec says.
func (p *Plugin) CreateVolume(_ context.Context, r *csipb.CreateVolumeRequest) (*csipb.CreateVolumeResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record("CreateVolume")
	if r.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name: required")
	}
	if err := checkCapabilities(r.GetVolumeCapabilities()); err != nil {
		return nil, err
	}
	size, err := p.capacity(r.GetCapacityRange())
	if err != nil {
		return nil, err
	}
	if !p.reachable(r.GetAccessibilityRequirements()) {
		return nil, status.Errorf(codes.ResourceExhausted, "no requested topology includes node %s, where this plugin keeps its volumes", p.opts.NodeID)
	}
	id := volumeID(r.GetName())
	if old, err := p.load(id); err == nil {
		if old.Capacity != size {
			return nil, status.Errorf(codes.AlreadyExists, "volume %q exists with %d bytes", r.GetName(), old.Capacity)
		}
		size = old.Capacity
	} else if err := p.save(id, &volumeRecord{Name: r.GetName(), Capacity: size}); err != nil {
		return nil, status.Errorf(codes.Internal, "create volume: %v", err)
	}
	return &csipb.CreateVolumeResponse{Volume: &csipb.Volume{
		VolumeId: id, CapacityBytes: size,
		VolumeContext:      map[string]string{"csitest.berth.io/name": r.GetName()},
		AccessibleTopology: []*csipb.Topology{{Segments: map[string]string{p.opts.TopologyKey: p.opts.NodeID}}},
	}}, nil
}

// capacity picks a size in the range: the required bytes, else the limit when it is
// below the default, else the default.
func (p *Plugin) capacity(cr *csipb.CapacityRange) (int64, error) {
	req, lim := cr.GetRequiredBytes(), cr.GetLimitBytes()
	if req < 0 || lim < 0 || lim > 0 && req > lim {
		return 0, status.Errorf(codes.InvalidArgument, "capacity_range: required %d, limit %d", req, lim)
	}
	size := req
	if size == 0 {
		size = defaultCapacity
		if lim > 0 && lim < size {
			size = lim
		}
	}
	if size > p.opts.MaxCapacity {
		return 0, status.Errorf(codes.OutOfRange, "capacity_range: %d bytes is over this plugin's %d", size, p.opts.MaxCapacity)
	}
	return size, nil
}

// reachable reports whether a volume on this node satisfies the request: no requisite
// topology, or one that includes this node.
func (p *Plugin) reachable(t *csipb.TopologyRequirement) bool {
	if len(t.GetRequisite()) == 0 {
		return true
	}
	for _, top := range t.GetRequisite() {
		if v, ok := top.GetSegments()[p.opts.TopologyKey]; ok && v == p.opts.NodeID {
			return true
		}
	}
	return false
}

// DeleteVolume removes a volume; an unknown one is already deleted. A volume still
// published to a node is FAILED_PRECONDITION: its data is in use.
func (p *Plugin) DeleteVolume(_ context.Context, r *csipb.DeleteVolumeRequest) (*csipb.DeleteVolumeResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record("DeleteVolume")
	rec, err := p.load(r.GetVolumeId())
	if errors.Is(err, os.ErrNotExist) {
		return &csipb.DeleteVolumeResponse{}, nil
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "delete volume: %v", err)
	}
	if len(rec.Published) > 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is still published to %d nodes", r.GetVolumeId(), len(rec.Published))
	}
	if err := p.remove(r.GetVolumeId()); err != nil {
		return nil, status.Errorf(codes.Internal, "delete volume: %v", err)
	}
	return &csipb.DeleteVolumeResponse{}, nil
}

// ValidateVolumeCapabilities confirms the capabilities of a volume it has.
func (p *Plugin) ValidateVolumeCapabilities(_ context.Context, r *csipb.ValidateVolumeCapabilitiesRequest) (*csipb.ValidateVolumeCapabilitiesResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record("ValidateVolumeCapabilities")
	if _, err := p.load(r.GetVolumeId()); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume %s: %v", r.GetVolumeId(), err)
	}
	if err := checkCapabilities(r.GetVolumeCapabilities()); err != nil {
		return &csipb.ValidateVolumeCapabilitiesResponse{Message: status.Convert(err).Message()}, nil
	}
	return &csipb.ValidateVolumeCapabilitiesResponse{Confirmed: &csipb.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext: r.GetVolumeContext(), VolumeCapabilities: r.GetVolumeCapabilities(), Parameters: r.GetParameters()}}, nil
}
