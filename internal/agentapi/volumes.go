package agentapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/volumes"
)

// Claims of CSI volumes (docs/volumes.md, Claims): the agent of a node claims a volume
// for a task group bound to that node that names the volume in a csi pod volume, before
// it stages and publishes it, and releases the claim once it unpublished it. The claim
// enforces the volume's access mode against the other live claims, makes the plugin's
// ControllerPublish to the node when the plugin has one, and is recorded in the
// volume's status.claims.

// claimTimeout bounds a claim or a release: a controller call may take the plugin's two
// minutes.
const claimTimeout = 150 * time.Second

// noVolumeCalls is the calls of a server that cannot reach agents (Config without a
// VolumeController): a claim that needs a publish gets 502.
type noVolumeCalls struct{}

func (noVolumeCalls) Call(context.Context, string, v4.CSIControllerRequest) (v4.CSIControllerReply, error) {
	return v4.CSIControllerReply{}, errors.New("this server cannot make CSI controller calls")
}

// handleAgentVolumeClaim claims a volume for a task group of the calling node and
// answers what the node's calls need (v4.CSIClaimGrant). Claiming again is idempotent.
// 404: no such volume or task group; 403: the task group is not this node's, or does
// not name the volume (with this readOnly); 422: the volume is not Available or the
// node has no node plugin of it; 409: its access mode does not admit the claim beside
// a live one, which the message names.
func (a *API) handleAgentVolumeClaim(w http.ResponseWriter, r *http.Request) error {
	var req v4.CSIClaimRequest
	if err := a.decodeClaim(w, r, &req); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), claimTimeout)
	defer cancel()
	node := httpapi.NodeOf(r)
	if err := a.checkClaimant(ctx, req, node); err != nil {
		return err
	}
	vol, err := a.volume(ctx, req)
	if err != nil {
		return err
	}
	claim, err := a.claim(ctx, vol, v4.VolumeClaim{TaskGroup: req.TaskGroup, Node: node, Mode: volumes.ModeOf(req.ReadOnly)})
	if err != nil {
		return err
	}
	secrets, err := volumes.Secrets(ctx, a.store, vol)
	if err != nil {
		return httpapi.Errorf(http.StatusUnprocessableEntity, "%v", err)
	}
	s := &vol.Spec
	httpapi.WriteJSON(w, http.StatusOK, v4.CSIClaimGrant{Plugin: s.Plugin, ExternalID: vol.Status.ExternalID, AccessMode: s.AccessMode,
		AttachmentMode: s.AttachmentMode, MountOptions: s.MountOptions, Context: vol.Status.Context,
		PublishContext: claim.PublishContext, Secrets: secrets})
	return nil
}

// decodeClaim reads a claim or release body, every name given.
func (a *API) decodeClaim(w http.ResponseWriter, r *http.Request, req *v4.CSIClaimRequest) error {
	body, err := a.bodies.Read(w, r)
	if err != nil {
		return err
	}
	if err := httpapi.DecodeStrict(body, req); err != nil {
		return httpapi.Errorf(http.StatusBadRequest, "the body is not a volume claim: %v", err)
	}
	for _, f := range []struct{ field, value string }{{"namespace", req.Namespace}, {"volume", req.Volume}, {"taskgroup", req.TaskGroup}} {
		if f.value == "" {
			return httpapi.Errorf(http.StatusBadRequest, "%s: required", f.field).WithDetail(f.field, "required")
		}
	}
	return nil
}

// checkClaimant checks that the claiming task group exists, is bound to node and names
// the volume in a csi pod volume with the claim's readOnly.
func (a *API) checkClaimant(ctx context.Context, req v4.CSIClaimRequest, node string) error {
	tg, err := a.taskGroups().Get(ctx, req.Namespace, req.TaskGroup)
	if errors.Is(err, store.ErrNotFound) {
		return httpapi.Errorf(http.StatusNotFound, "task group %s/%s not found", req.Namespace, req.TaskGroup)
	}
	if err != nil {
		return err
	}
	if tg.Spec.Node != node {
		return httpapi.Errorf(http.StatusForbidden, "task group %s/%s is not bound to node %s", req.Namespace, req.TaskGroup, node)
	}
	named := false
	for _, v := range tg.Spec.Template.Spec.Volumes {
		if v.CSI == nil || v.CSI.Volume != req.Volume {
			continue
		}
		if v.CSI.ReadOnly == req.ReadOnly {
			return nil
		}
		named = true
	}
	if named {
		return httpapi.Errorf(http.StatusForbidden, "task group %s/%s names volume %s with readOnly %t, not %t",
			req.Namespace, req.TaskGroup, req.Volume, !req.ReadOnly, req.ReadOnly)
	}
	return httpapi.Errorf(http.StatusForbidden, "task group %s/%s has no csi pod volume of volume %s", req.Namespace, req.TaskGroup, req.Volume)
}

// volume reads the volume of a claim or release: 404 when there is none.
func (a *API) volume(ctx context.Context, req v4.CSIClaimRequest) (*v4.CSIVolume, error) {
	vol, err := store.Typed[*v4.CSIVolume](a.store, v4.KindVolume).Get(ctx, req.Namespace, req.Volume)
	if errors.Is(err, store.ErrNotFound) {
		return nil, httpapi.Errorf(http.StatusNotFound, "volume %s/%s not found", req.Namespace, req.Volume)
	}
	return vol, err
}

// admits checks that vol may take claim c now: Available (422) and its access mode
// (409).
func admits(vol *v4.CSIVolume, c v4.VolumeClaim) error {
	if vol.Status.Phase != v4.VolumeAvailable {
		return httpapi.Errorf(http.StatusUnprocessableEntity, "volume %s/%s is %s, not %s: %s", vol.Metadata.Namespace, vol.Metadata.Name,
			phaseOf(vol), v4.VolumeAvailable, vol.Status.Message)
	}
	var ce *volumes.ConflictError
	if err := volumes.CheckAccess(vol, c); errors.As(err, &ce) {
		return httpapi.Errorf(http.StatusConflict, "%v", ce)
	}
	return nil
}

func phaseOf(vol *v4.CSIVolume) string {
	if vol.Status.Phase == "" {
		return v4.VolumePending
	}
	return vol.Status.Phase
}

// claim records claim c on vol (read just before), after the plugin's ControllerPublish
// to c's node when it has one, and returns the claim recorded. A task group's claim
// already recorded is returned as it is.
func (a *API) claim(ctx context.Context, vol *v4.CSIVolume, c v4.VolumeClaim) (v4.VolumeClaim, error) {
	if have, ok := volumes.ClaimOf(vol, c.TaskGroup); ok && have.Node == c.Node && have.Mode == c.Mode {
		return have, nil
	}
	if err := admits(vol, c); err != nil {
		return c, err
	}
	published, err := a.publish(ctx, vol, &c)
	if err != nil {
		return c, err
	}
	recorded := c
	_, err = volumes.Update(ctx, a.store, vol.Metadata.Namespace, vol.Metadata.Name, func(cur *v4.CSIVolume) (bool, error) {
		if have, ok := volumes.ClaimOf(cur, c.TaskGroup); ok && have.Node == c.Node && have.Mode == c.Mode {
			recorded = have // a claim of the same task group was recorded meanwhile
			return false, nil
		}
		if err := admits(cur, c); err != nil {
			return false, err
		}
		volumes.WithoutClaim(cur, c.TaskGroup)
		cur.Status.Claims = append(cur.Status.Claims, c)
		return true, nil
	})
	if err != nil && published {
		// Not recorded: undo the publish unless another claim of the node uses it.
		if cur, rerr := a.volume(ctx, v4.CSIClaimRequest{Namespace: vol.Metadata.Namespace, Volume: vol.Metadata.Name}); rerr == nil {
			if uerr := volumes.Unpublish(ctx, a.calls, a.store, a.listNodes(), cur, c); uerr != nil {
				a.log.Warn("undo a volume publish of a claim not recorded", "volume", vol.Metadata.Name, "node", c.Node, "err", uerr)
			}
		}
	}
	return recorded, err
}

// publish makes the plugin's ControllerPublish of vol to claim c's node when the plugin
// has one, setting c's NodeID and PublishContext; a claim of the same node that carries
// one already lends it. It reports whether it made the call.
func (a *API) publish(ctx context.Context, vol *v4.CSIVolume, c *v4.VolumeClaim) (bool, error) {
	nodes := a.listNodes()
	ctl, plugin, err := volumes.Controller(nodes, vol)
	if err != nil {
		if !volumes.HasController(nodes, vol.Spec.Plugin) {
			return false, nil // a node-only plugin: nothing to publish
		}
		return false, httpapi.Errorf(http.StatusServiceUnavailable, "volume %s cannot be published to node %s: %v", vol.Metadata.Name, c.Node, err)
	}
	if !volumes.Has(plugin, v4.CSIPublishUnpublish) {
		return false, nil
	}
	if other, ok := volumes.PublishedOn(vol, c.Node, c.TaskGroup); ok {
		c.NodeID, c.PublishContext = other.NodeID, other.PublishContext
		return false, nil
	}
	nodeID, err := a.nodePluginID(ctx, c.Node, vol.Spec.Plugin)
	if err != nil {
		return false, err
	}
	secrets, err := volumes.Secrets(ctx, a.store, vol)
	if err != nil {
		return false, httpapi.Errorf(http.StatusUnprocessableEntity, "%v", err)
	}
	reply, err := a.calls.Call(ctx, ctl, v4.CSIControllerRequest{Plugin: vol.Spec.Plugin, Op: v4.CSIOpPublish, VolumeID: vol.Status.ExternalID,
		AccessMode: vol.Spec.AccessMode, AttachmentMode: vol.Spec.AttachmentMode, MountOptions: vol.Spec.MountOptions,
		Context: vol.Status.Context, Secrets: secrets, NodeID: nodeID, ReadOnly: c.Mode == volumes.ModeRead})
	if err != nil {
		return false, callError(fmt.Errorf("publish volume %s to node %s: %w", vol.Metadata.Name, c.Node, err))
	}
	c.NodeID, c.PublishContext = nodeID, reply.PublishContext
	return true, nil
}

// callError is the answer to a failed controller call: 422 for the plugin's refusal,
// 502 otherwise (the agent retries).
func callError(err error) error {
	if errors.Is(err, volumes.ErrRefused) {
		return httpapi.Errorf(http.StatusUnprocessableEntity, "%v", err)
	}
	return httpapi.Errorf(http.StatusBadGateway, "%v", err)
}

// nodePluginID is the ID node's own plugin reports for it (NodeGetInfo), which
// ControllerPublish needs: 422 when the node has no healthy node plugin of that name.
func (a *API) nodePluginID(ctx context.Context, node, plugin string) (string, error) {
	n, err := a.nodes().Get(ctx, "", node)
	if err != nil {
		return "", httpapi.NodeError(node, err)
	}
	p, ok := volumes.Plugin(n, plugin)
	if !ok || !p.Healthy || !p.Node || p.NodeID == "" {
		return "", httpapi.Errorf(http.StatusUnprocessableEntity, "node %s has no healthy node plugin %s with a node ID", node, plugin)
	}
	return p.NodeID, nil
}

// listNodes lists the nodes from the shared cache.
func (a *API) listNodes() []*v4.Node {
	objs, _, _ := a.nodeCache.List("", "") // index "" always answers
	out := make([]*v4.Node, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*v4.Node))
	}
	return out
}
