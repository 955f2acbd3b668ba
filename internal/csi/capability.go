package csi

import (
	"fmt"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	v4 "github.com/berthhq/berth/api/v4"
)

// Capability is how a volume is used: its access mode (one of v4.AccessModes()) and
// either a file system (FSType, MountFlags) or a raw block device.
type Capability struct {
	AccessMode string
	Block      bool
	FSType     string
	MountFlags []string
}

// accessModes maps berth's (Nomad's) access mode names to CSI's.
var accessModes = map[string]csipb.VolumeCapability_AccessMode_Mode{
	v4.AccessSingleNodeReader:      csipb.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
	v4.AccessSingleNodeWriter:      csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
	v4.AccessMultiNodeReader:       csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY,
	v4.AccessMultiNodeSingleWriter: csipb.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER,
	v4.AccessMultiNodeMultiWriter:  csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER,
}

// ReadOnly reports whether the access mode only reads.
func (c Capability) ReadOnly() bool {
	return c.AccessMode == v4.AccessSingleNodeReader || c.AccessMode == v4.AccessMultiNodeReader
}

// proto returns the CSI VolumeCapability of c.
func (c Capability) proto() (*csipb.VolumeCapability, error) {
	mode, ok := accessModes[c.AccessMode]
	if !ok {
		return nil, fmt.Errorf("unknown access mode %q", c.AccessMode)
	}
	vc := &csipb.VolumeCapability{AccessMode: &csipb.VolumeCapability_AccessMode{Mode: mode}}
	if c.Block {
		if c.FSType != "" || len(c.MountFlags) > 0 {
			return nil, fmt.Errorf("a block device has no file system type or mount flags")
		}
		vc.AccessType = &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}}
		return vc, nil
	}
	vc.AccessType = &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{
		FsType: c.FSType, MountFlags: c.MountFlags,
	}}
	return vc, nil
}

// CapabilityOf returns the capability a volume's spec asks for.
func CapabilityOf(s *v4.VolumeSpec) Capability {
	c := Capability{AccessMode: s.AccessMode, Block: s.AttachmentMode == v4.AttachBlockDevice}
	if s.MountOptions != nil {
		c.FSType, c.MountFlags = s.MountOptions.FSType, s.MountOptions.Flags
	}
	return c
}

// Topology is one set of topology segments ({"topology.hostpath.csi/node": "n1"}).
type Topology map[string]string

func topologiesProto(ts []Topology) []*csipb.Topology {
	out := make([]*csipb.Topology, 0, len(ts))
	for _, t := range ts {
		out = append(out, &csipb.Topology{Segments: t})
	}
	return out
}

func topologiesOf(ts []*csipb.Topology) []Topology {
	var out []Topology
	for _, t := range ts {
		if t != nil {
			out = append(out, Topology(t.GetSegments()))
		}
	}
	return out
}
