package controller

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/volumes"
)

// provision creates vol through its plugin's controller, or validates the existing
// volume it registers, and makes it Available. Without a controller anywhere it stays
// Pending, saying so; a plugin that cannot create volumes puts it in Error.
func (c *VolumeController) provision(ctx context.Context, vol *v4.CSIVolume) error {
	node, plugin, err := volumes.Controller(c.listNodes(), vol)
	if err != nil {
		return c.waiting(ctx, vol, err)
	}
	if vol.Spec.ExternalID != "" {
		return c.register(ctx, vol, node)
	}
	if !volumes.Has(plugin, v4.CSICreateDelete) {
		return c.failed(ctx, vol, fmt.Sprintf("plugin %s cannot create volumes (its controller on node %s lacks %s): register an existing volume with spec.externalID",
			vol.Spec.Plugin, node, v4.CSICreateDelete))
	}
	if vol.Status.Phase != v4.VolumeCreating || vol.Status.UID == "" {
		uid := vol.Status.UID
		if uid == "" {
			uid = newVolumeUID()
		}
		if vol, err = c.setStatus(ctx, vol, func(s *v4.VolumeStatus) {
			s.Phase, s.UID, s.Message = v4.VolumeCreating, uid, "creating through the controller of plugin "+vol.Spec.Plugin+" on node "+node
		}); err != nil {
			return err
		}
	}
	reply, err := c.createCall(ctx, vol, node)
	if errors.Is(err, volumes.ErrRefused) {
		return c.failed(ctx, vol, fmt.Sprintf("plugin %s refused to create the volume: %v", vol.Spec.Plugin, err))
	}
	if err != nil {
		return c.waiting(ctx, vol, fmt.Errorf("create through node %s: %w", node, err))
	}
	_, err = c.setStatus(ctx, vol, func(s *v4.VolumeStatus) {
		s.ExternalID, s.Capacity, s.Context, s.Topology = reply.VolumeID, reply.Capacity, reply.Context, reply.Topology
		if s.Phase != v4.VolumeDeleting { // deleted meanwhile: the delete goes on with the ID
			s.Phase, s.Message = v4.VolumeAvailable, ""
		}
	})
	if err == nil {
		c.record(v4.Event{Type: v4.EventNormal, Reason: "VolumeCreated", Kind: v4.KindVolume, Namespace: vol.Metadata.Namespace,
			Name: vol.Metadata.Name, Message: fmt.Sprintf("plugin %s created volume %s (%d bytes)", vol.Spec.Plugin, reply.VolumeID, reply.Capacity)})
	}
	return err
}

// newVolumeUID is a fresh idempotency name for CreateVolume.
func newVolumeUID() string {
	return "berth-" + strings.ToLower(rand.Text())
}

// createCall asks the plugin's controller on node to create vol (or to find the volume
// an earlier call with the same name created).
func (c *VolumeController) createCall(ctx context.Context, vol *v4.CSIVolume, node string) (v4.CSIControllerReply, error) {
	var minB, maxB int64
	if cp := vol.Spec.Capacity; cp != nil {
		minB, _ = v4.ParseVolumeSize(cp.Min) // validated at admission (and by the guard)
		maxB, _ = v4.ParseVolumeSize(cp.Max)
	}
	secrets, err := volumes.Secrets(ctx, c.store, vol)
	if err != nil {
		return v4.CSIControllerReply{}, err
	}
	s := &vol.Spec
	return c.calls.Call(ctx, node, v4.CSIControllerRequest{Plugin: s.Plugin, Op: v4.CSIOpCreate, Name: vol.Status.UID,
		MinBytes: minB, MaxBytes: maxB, AccessMode: s.AccessMode, AttachmentMode: s.AttachmentMode, MountOptions: s.MountOptions,
		Topology: s.Topology, Parameters: s.Parameters, Secrets: secrets})
}

// register validates the existing volume vol names (spec.externalID) with the plugin's
// controller on node and makes it Available.
func (c *VolumeController) register(ctx context.Context, vol *v4.CSIVolume, node string) error {
	secrets, err := volumes.Secrets(ctx, c.store, vol)
	if err != nil {
		return c.waiting(ctx, vol, err)
	}
	s := &vol.Spec
	_, err = c.calls.Call(ctx, node, v4.CSIControllerRequest{Plugin: s.Plugin, Op: v4.CSIOpValidate, VolumeID: s.ExternalID,
		AccessMode: s.AccessMode, AttachmentMode: s.AttachmentMode, MountOptions: s.MountOptions, Parameters: s.Parameters, Secrets: secrets})
	if errors.Is(err, volumes.ErrRefused) {
		return c.failed(ctx, vol, fmt.Sprintf("plugin %s refused volume %s: %v", s.Plugin, s.ExternalID, err))
	}
	if err != nil {
		return c.waiting(ctx, vol, fmt.Errorf("validate through node %s: %w", node, err))
	}
	_, err = c.setStatus(ctx, vol, func(st *v4.VolumeStatus) {
		st.Phase, st.ExternalID, st.Message = v4.VolumeAvailable, s.ExternalID, ""
	})
	return err
}

// deprovision deletes the volume berth created through its plugin's controller, then the
// object. A failed delete keeps the object Deleting, with the error as its message, and
// is retried with backoff.
func (c *VolumeController) deprovision(ctx context.Context, vol *v4.CSIVolume) error {
	if len(vol.Status.Claims) > 0 { // never admitted: a claim needs an Available volume
		if err := c.collectClaims(ctx, vol); err != nil {
			return err
		}
		return c.waiting(ctx, vol, fmt.Errorf("claimed by %s: deleted once released", claimNames(vol.Status.Claims)))
	}
	if vol.Spec.ExternalID == "" && (vol.Status.ExternalID != "" || vol.Status.UID != "") {
		if err := c.deleteCall(ctx, vol); err != nil {
			return c.waiting(ctx, vol, err)
		}
	}
	_, err := c.store.Delete(ctx, v4.KindVolume, vol.Metadata.Namespace, vol.Metadata.Name, vol.Metadata.ResourceVersion)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove volume %s/%s: %w", vol.Metadata.Namespace, vol.Metadata.Name, err)
	}
	c.record(v4.Event{Type: v4.EventNormal, Reason: "VolumeDeleted", Kind: v4.KindVolume, Namespace: vol.Metadata.Namespace,
		Name: vol.Metadata.Name, Message: fmt.Sprintf("plugin %s deleted volume %s", vol.Spec.Plugin, vol.Status.ExternalID)})
	return nil
}

// deleteCall deletes vol in its plugin. A volume deleted while being created has no ID
// yet: the same idempotent create finds it first (a refused create made nothing).
func (c *VolumeController) deleteCall(ctx context.Context, vol *v4.CSIVolume) error {
	node, _, err := volumes.Controller(c.listNodes(), vol)
	if err != nil {
		return err
	}
	id := vol.Status.ExternalID
	if id == "" {
		reply, err := c.createCall(ctx, vol, node)
		if errors.Is(err, volumes.ErrRefused) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("find the volume to delete through node %s: %w", node, err)
		}
		id = reply.VolumeID
	}
	secrets, err := volumes.Secrets(ctx, c.store, vol)
	if err != nil {
		return err
	}
	if _, err := c.calls.Call(ctx, node, v4.CSIControllerRequest{Plugin: vol.Spec.Plugin, Op: v4.CSIOpDelete, VolumeID: id,
		Context: vol.Status.Context, Secrets: secrets}); err != nil {
		return fmt.Errorf("delete volume %s through node %s: %w", id, node, err)
	}
	return nil
}
