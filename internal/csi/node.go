package csi

import (
	"context"
	"path/filepath"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// NodeInfo is what a node plugin says of its node.
type NodeInfo struct {
	// ID is the plugin's name for the node, passed to ControllerPublish.
	ID         string
	MaxVolumes int64
	// Topology is where the node is (nil: the plugin has no accessibility constraints).
	Topology Topology
}

// NodeInfo asks the node plugin for its node's ID and topology.
func (c *Client) NodeInfo(ctx context.Context) (NodeInfo, error) {
	r, err := call(ctx, c, "NodeGetInfo", probeTimeout, func(ctx context.Context) (*csipb.NodeGetInfoResponse, error) {
		return c.node.NodeGetInfo(ctx, &csipb.NodeGetInfoRequest{})
	})
	if err != nil {
		return NodeInfo{}, err
	}
	ni := NodeInfo{ID: r.GetNodeId(), MaxVolumes: r.GetMaxVolumesPerNode()}
	if t := r.GetAccessibleTopology(); t != nil {
		ni.Topology = Topology(t.GetSegments())
	}
	return ni, nil
}

// NodeCapabilities are the node RPCs a plugin implements.
type NodeCapabilities struct {
	StageUnstage   bool
	GetVolumeStats bool
	ExpandVolume   bool
}

// NodeCapabilities asks the node plugin what it implements.
func (c *Client) NodeCapabilities(ctx context.Context) (NodeCapabilities, error) {
	r, err := call(ctx, c, "NodeGetCapabilities", probeTimeout, func(ctx context.Context) (*csipb.NodeGetCapabilitiesResponse, error) {
		return c.node.NodeGetCapabilities(ctx, &csipb.NodeGetCapabilitiesRequest{})
	})
	if err != nil {
		return NodeCapabilities{}, err
	}
	var nc NodeCapabilities
	for _, cap := range r.GetCapabilities() {
		switch cap.GetRpc().GetType() {
		case csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME:
			nc.StageUnstage = true
		case csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS:
			nc.GetVolumeStats = true
		case csipb.NodeServiceCapability_RPC_EXPAND_VOLUME:
			nc.ExpandVolume = true
		}
	}
	return nc, nil
}

// NodeRequest is a volume on this node: its ID, how it is used, the contexts the
// controller calls returned, and the paths the caller (the agent) chose for it.
type NodeRequest struct {
	VolumeID       string
	Capability     Capability
	PublishContext map[string]string
	VolumeContext  map[string]string
	Secrets        map[string]string
	// StagingPath is the volume's per-node directory (NodeStageVolume); TargetPath is the
	// per-task directory or, for a block device, file (NodePublishVolume).
	StagingPath string
	TargetPath  string
	// ReadOnly publishes read-only a volume whose access mode writes (a read-only
	// claim); a reader access mode is read-only anyway.
	ReadOnly bool
}

// checkPath refuses a path the plugin, which runs as root, must not be handed: relative,
// or not in its clean form (with "..", "." or doubled slashes).
func (c *Client) checkPath(call, field, p string) error {
	if p == "" || !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return c.misuse(call, codes.InvalidArgument, "%s %q must be a clean absolute path", field, p)
	}
	return nil
}

// NodeStage stages the volume at req.StagingPath. It returns whether the plugin staged
// it: a plugin without STAGE_UNSTAGE_VOLUME has nothing to stage, and NodePublish is then
// called with an empty staging path.
func (c *Client) NodeStage(ctx context.Context, req NodeRequest) (bool, error) {
	const name = "NodeStageVolume"
	caps, err := c.NodeCapabilities(ctx)
	if err != nil || !caps.StageUnstage {
		return false, err
	}
	if err := c.checkPath(name, "staging path", req.StagingPath); err != nil {
		return false, err
	}
	vc, err := req.Capability.proto()
	if err != nil {
		return false, c.misuse(name, codes.InvalidArgument, "%v", err)
	}
	_, err = call(ctx, c, name, 0, func(ctx context.Context) (*csipb.NodeStageVolumeResponse, error) {
		return c.node.NodeStageVolume(ctx, &csipb.NodeStageVolumeRequest{
			VolumeId: req.VolumeID, PublishContext: req.PublishContext, StagingTargetPath: req.StagingPath,
			VolumeCapability: vc, Secrets: req.Secrets, VolumeContext: req.VolumeContext,
		})
	})
	return err == nil, err
}

// NodeUnstage undoes NodeStage; skipped for a plugin without STAGE_UNSTAGE_VOLUME.
func (c *Client) NodeUnstage(ctx context.Context, volumeID, stagingPath string) error {
	const name = "NodeUnstageVolume"
	caps, err := c.NodeCapabilities(ctx)
	if err != nil || !caps.StageUnstage {
		return err
	}
	if err := c.checkPath(name, "staging path", stagingPath); err != nil {
		return err
	}
	_, err = call(ctx, c, name, 0, func(ctx context.Context) (*csipb.NodeUnstageVolumeResponse, error) {
		return c.node.NodeUnstageVolume(ctx, &csipb.NodeUnstageVolumeRequest{VolumeId: volumeID, StagingTargetPath: stagingPath})
	})
	return err
}

// NodePublish makes the volume visible at req.TargetPath (read-only for a reader access
// mode). staged says whether NodeStage staged it; when it did not, no staging path is sent.
func (c *Client) NodePublish(ctx context.Context, req NodeRequest, staged bool) error {
	const name = "NodePublishVolume"
	if err := c.checkPath(name, "target path", req.TargetPath); err != nil {
		return err
	}
	staging := ""
	if staged {
		if err := c.checkPath(name, "staging path", req.StagingPath); err != nil {
			return err
		}
		staging = req.StagingPath
	}
	vc, err := req.Capability.proto()
	if err != nil {
		return c.misuse(name, codes.InvalidArgument, "%v", err)
	}
	_, err = call(ctx, c, name, 0, func(ctx context.Context) (*csipb.NodePublishVolumeResponse, error) {
		return c.node.NodePublishVolume(ctx, &csipb.NodePublishVolumeRequest{
			VolumeId: req.VolumeID, PublishContext: req.PublishContext, StagingTargetPath: staging,
			TargetPath: req.TargetPath, VolumeCapability: vc, Readonly: req.ReadOnly || req.Capability.ReadOnly(),
			Secrets: req.Secrets, VolumeContext: req.VolumeContext,
		})
	})
	return err
}

// NodeUnpublish undoes NodePublish.
func (c *Client) NodeUnpublish(ctx context.Context, volumeID, targetPath string) error {
	const name = "NodeUnpublishVolume"
	if err := c.checkPath(name, "target path", targetPath); err != nil {
		return err
	}
	_, err := call(ctx, c, name, 0, func(ctx context.Context) (*csipb.NodeUnpublishVolumeResponse, error) {
		return c.node.NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: volumeID, TargetPath: targetPath})
	})
	return err
}
