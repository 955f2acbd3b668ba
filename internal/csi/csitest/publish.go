package csitest

import (
	"context"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ControllerPublishVolume records that the volume is published to a node and returns the
// publish context NodeStage then requires.
func (p *Plugin) ControllerPublishVolume(_ context.Context, r *csipb.ControllerPublishVolumeRequest) (*csipb.ControllerPublishVolumeResponse, error) {
	if !p.opts.ControllerPublish {
		return nil, status.Error(codes.Unimplemented, "csitest runs without the publish capability")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record("ControllerPublishVolume")
	if r.GetNodeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "node_id: required")
	}
	if err := checkCapabilities([]*csipb.VolumeCapability{r.GetVolumeCapability()}); err != nil {
		return nil, err
	}
	rec, err := p.load(r.GetVolumeId())
	if err != nil {
		return nil, status.Errorf(codes.NotFound, "volume %s: %v", r.GetVolumeId(), err)
	}
	if rec.Published == nil {
		rec.Published = map[string]bool{}
	}
	rec.Published[r.GetNodeId()] = true
	if err := p.save(r.GetVolumeId(), rec); err != nil {
		return nil, status.Errorf(codes.Internal, "publish: %v", err)
	}
	return &csipb.ControllerPublishVolumeResponse{PublishContext: map[string]string{publishContextKey: r.GetNodeId()}}, nil
}

// ControllerUnpublishVolume forgets a publication; an unknown volume or node is done.
func (p *Plugin) ControllerUnpublishVolume(_ context.Context, r *csipb.ControllerUnpublishVolumeRequest) (*csipb.ControllerUnpublishVolumeResponse, error) {
	if !p.opts.ControllerPublish {
		return nil, status.Error(codes.Unimplemented, "csitest runs without the publish capability")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record("ControllerUnpublishVolume")
	rec, err := p.load(r.GetVolumeId())
	if err != nil {
		return &csipb.ControllerUnpublishVolumeResponse{}, nil
	}
	if r.GetNodeId() == "" {
		rec.Published = nil
	} else {
		delete(rec.Published, r.GetNodeId())
	}
	if err := p.save(r.GetVolumeId(), rec); err != nil {
		return nil, status.Errorf(codes.Internal, "unpublish: %v", err)
	}
	return &csipb.ControllerUnpublishVolumeResponse{}, nil
}
