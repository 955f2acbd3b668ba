package csitest

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/berthhq/berth/internal/mountinfo"
)

// NodeGetInfo reports the node's ID, its volume limit and its topology.
func (p *Plugin) NodeGetInfo(context.Context, *csipb.NodeGetInfoRequest) (*csipb.NodeGetInfoResponse, error) {
	return &csipb.NodeGetInfoResponse{NodeId: p.opts.NodeID, MaxVolumesPerNode: p.opts.MaxVolumes,
		AccessibleTopology: &csipb.Topology{Segments: map[string]string{p.opts.TopologyKey: p.opts.NodeID}}}, nil
}

// NodeGetCapabilities offers staging unless NoStage.
func (p *Plugin) NodeGetCapabilities(context.Context, *csipb.NodeGetCapabilitiesRequest) (*csipb.NodeGetCapabilitiesResponse, error) {
	var caps []*csipb.NodeServiceCapability
	if !p.opts.NoStage {
		caps = append(caps, &csipb.NodeServiceCapability{Type: &csipb.NodeServiceCapability_Rpc{
			Rpc: &csipb.NodeServiceCapability_RPC{Type: csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}}})
	}
	return &csipb.NodeGetCapabilitiesResponse{Capabilities: caps}, nil
}

// NodeStageVolume bind-mounts the volume's data on the staging path.
func (p *Plugin) NodeStageVolume(_ context.Context, r *csipb.NodeStageVolumeRequest) (*csipb.NodeStageVolumeResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record("NodeStageVolume")
	if p.opts.NoStage {
		return nil, status.Error(codes.Unimplemented, "csitest runs without the stage capability")
	}
	if p.opts.ControllerPublish && r.GetPublishContext()[publishContextKey] != p.opts.NodeID {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s was not published to node %s (publish context %v)", r.GetVolumeId(), p.opts.NodeID, r.GetPublishContext())
	}
	if err := p.bind(r.GetVolumeId(), "", r.GetStagingTargetPath(), false, r.GetVolumeCapability()); err != nil {
		return nil, err
	}
	return &csipb.NodeStageVolumeResponse{}, nil
}

// NodeUnstageVolume unmounts the staging path.
func (p *Plugin) NodeUnstageVolume(_ context.Context, r *csipb.NodeUnstageVolumeRequest) (*csipb.NodeUnstageVolumeResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record("NodeUnstageVolume")
	if err := unmount(r.GetStagingTargetPath()); err != nil {
		return nil, err
	}
	return &csipb.NodeUnstageVolumeResponse{}, nil
}

// NodePublishVolume bind-mounts the staged volume (or its data, without staging) on the
// target path, read-only when asked.
func (p *Plugin) NodePublishVolume(_ context.Context, r *csipb.NodePublishVolumeRequest) (*csipb.NodePublishVolumeResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record("NodePublishVolume")
	if _, err := p.load(r.GetVolumeId()); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume %s: %v", r.GetVolumeId(), err)
	}
	staging := r.GetStagingTargetPath()
	if !p.opts.NoStage {
		if staging == "" {
			return nil, status.Error(codes.FailedPrecondition, "staging_target_path: required: the volume is staged first")
		}
		if ok, err := mountinfo.IsMountPoint(mountinfo.Self, staging); err != nil || !ok {
			return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not staged at %s", r.GetVolumeId(), staging)
		}
	}
	if err := p.bind(r.GetVolumeId(), staging, r.GetTargetPath(), r.GetReadonly(), r.GetVolumeCapability()); err != nil {
		return nil, err
	}
	return &csipb.NodePublishVolumeResponse{}, nil
}

// NodeUnpublishVolume unmounts the target path.
func (p *Plugin) NodeUnpublishVolume(_ context.Context, r *csipb.NodeUnpublishVolumeRequest) (*csipb.NodeUnpublishVolumeResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record("NodeUnpublishVolume")
	if err := unmount(r.GetTargetPath()); err != nil {
		return nil, err
	}
	return &csipb.NodeUnpublishVolumeResponse{}, nil
}

// bind mounts source (the volume's data when empty) on target, read-only when ro. A
// target that is already a mount point is taken as done: the calls are idempotent.
func (p *Plugin) bind(id, source, target string, ro bool, vc *csipb.VolumeCapability) error {
	if target == "" || !filepath.IsAbs(target) {
		return status.Errorf(codes.InvalidArgument, "target path %q: must be an absolute path", target)
	}
	if err := checkCapabilities([]*csipb.VolumeCapability{vc}); err != nil {
		return err
	}
	if _, err := p.load(id); err != nil {
		return status.Errorf(codes.NotFound, "volume %s: %v", id, err)
	}
	if source == "" {
		source = p.DataDir(id)
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return status.Errorf(codes.Internal, "mount %s: %v", target, err)
	}
	if ok, err := mountinfo.IsMountPoint(mountinfo.Self, target); err != nil {
		return status.Errorf(codes.Internal, "mount %s: %v", target, err)
	} else if ok {
		return nil
	}
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		return status.Errorf(codes.Internal, "bind %s on %s: %v", source, target, err)
	}
	if ro {
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			_ = unix.Unmount(target, 0)
			return status.Errorf(codes.Internal, "make %s read-only: %v", target, err)
		}
	}
	return nil
}

// unmount unmounts path; a path that is not mounted, or not there, is done.
func unmount(path string) error {
	if path == "" || !filepath.IsAbs(path) {
		return status.Errorf(codes.InvalidArgument, "path %q: must be an absolute path", path)
	}
	err := unix.Unmount(path, 0)
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return status.Errorf(codes.Internal, "unmount %s: %v", path, err)
}
