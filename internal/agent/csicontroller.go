package agent

import (
	"context"
	"io"
	"net/http"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/csi"
	"github.com/berthhq/berth/internal/httpapi"
)

// The server's controller calls (docs/volumes.md, "Plugins"): a controller plugin runs
// as a workload on some node, where only that node's agent reaches its socket, so the
// server asks that agent (POST /v1/csi/controller) to create, validate, delete, publish
// or unpublish a volume, and gets the plugin's answer back, its gRPC code kept as the
// HTTP status.

// maxCSIControllerBody bounds a request: parameters, secrets and contexts are bounded by
// the volume's own limits at admission, far below this.
const maxCSIControllerBody = 1 << 20

func (a *Agent) handleCSIController(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxCSIControllerBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "the request is larger than %d bytes or cannot be read: %v", maxCSIControllerBody, err)
		return
	}
	var req v4.CSIControllerRequest
	if err := httpapi.DecodeStrict(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "the body is not a CSI controller request: %v", err)
		return
	}
	if !v4.ValidCSIPluginName(req.Plugin) {
		writeError(w, http.StatusBadRequest, "plugin: %q is not a CSI plugin name", req.Plugin)
		return
	}
	if !slices.Contains(csiOps, req.Op) {
		writeError(w, http.StatusBadRequest, "op: unknown operation %q: use one of %v", req.Op, csiOps)
		return
	}
	c, info, ok := a.csiPlugins.Client(req.Plugin)
	switch {
	case !ok:
		// 503, not 404: the server chose this node because its status listed the plugin,
		// which has gone since (a plugin restarting); a 404 is the plugin's own NotFound,
		// which the server takes for a refusal.
		writeError(w, http.StatusServiceUnavailable, "node %s has no CSI plugin %s (none listens in %s)", a.cfg.NodeName, req.Plugin, a.cfg.CSIPluginDir)
		return
	case !info.Controller:
		writeError(w, http.StatusConflict, "the CSI plugin %s on node %s offers no controller service: it is a node plugin only", req.Plugin, a.cfg.NodeName)
		return
	case !info.Healthy:
		writeError(w, http.StatusServiceUnavailable, "the CSI plugin %s on node %s is not healthy: %s", req.Plugin, a.cfg.NodeName, info.Message)
		return
	}
	reply, err := csiControllerCall(r.Context(), c, &req)
	if err != nil {
		writeError(w, csiHTTPStatus(err), "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, reply)
}

// csiControllerCall makes the call req asks for.
func csiControllerCall(ctx context.Context, c *csi.Client, req *v4.CSIControllerRequest) (v4.CSIControllerReply, error) {
	capability := csi.Capability{AccessMode: req.AccessMode, Block: req.AttachmentMode == v4.AttachBlockDevice}
	if mo := req.MountOptions; mo != nil {
		capability.FSType, capability.MountFlags = mo.FSType, mo.Flags
	}
	var out v4.CSIControllerReply
	switch req.Op {
	case v4.CSIOpCreate:
		cr := csi.CreateRequest{Name: req.Name, MinBytes: req.MinBytes, MaxBytes: req.MaxBytes, Capability: capability,
			Parameters: req.Parameters, Secrets: req.Secrets}
		if t := req.Topology; t != nil {
			cr.Required, cr.Preferred = csiTopologies(t.Required), csiTopologies(t.Preferred)
		}
		v, err := c.CreateVolume(ctx, cr)
		if err != nil {
			return out, err
		}
		out = v4.CSIControllerReply{VolumeID: v.ID, Capacity: v.CapacityBytes, Context: v.Context}
		for _, t := range v.Topology {
			out.Topology = append(out.Topology, v4.VolumeTopology{Segments: t})
		}
		return out, nil
	case v4.CSIOpDelete:
		return out, c.DeleteVolume(ctx, req.VolumeID, req.Secrets)
	case v4.CSIOpValidate:
		return out, c.ValidateCapability(ctx, req.VolumeID, capability, req.Context, req.Secrets)
	case v4.CSIOpPublish:
		pc, err := c.ControllerPublish(ctx, csi.PublishRequest{VolumeID: req.VolumeID, NodeID: req.NodeID,
			Capability: capability, Context: req.Context, Secrets: req.Secrets, ReadOnly: req.ReadOnly})
		out.PublishContext = pc
		return out, err
	case v4.CSIOpUnpublish:
		return out, c.ControllerUnpublish(ctx, req.VolumeID, req.NodeID, req.Secrets)
	}
	return out, status.Errorf(codes.InvalidArgument, "op: unknown operation %q", req.Op)
}

// csiOps are the operations of CSIControllerRequest.Op.
var csiOps = []string{v4.CSIOpCreate, v4.CSIOpDelete, v4.CSIOpValidate, v4.CSIOpPublish, v4.CSIOpUnpublish}

func csiTopologies(ts []v4.VolumeTopology) []csi.Topology {
	out := make([]csi.Topology, 0, len(ts))
	for _, t := range ts {
		out = append(out, csi.Topology(t.Segments))
	}
	return out
}

// csiHTTPStatus maps a plugin's gRPC code to the HTTP status the server sees.
func csiHTTPStatus(err error) int {
	switch csi.Code(err) {
	case codes.NotFound:
		return http.StatusNotFound
	case codes.InvalidArgument:
		return http.StatusBadRequest
	case codes.AlreadyExists:
		return http.StatusConflict
	case codes.ResourceExhausted, codes.OutOfRange:
		return http.StatusUnprocessableEntity
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}
