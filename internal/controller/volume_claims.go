package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/volumes"
)

// collectClaims releases vol's claims whose task group no longer exists or is bound to
// another node than the claim's (its node was lost and it went elsewhere): the agent
// that claimed will not release them. Each is unpublished from its node when it was
// published, then removed; a failure is returned, so the worker backs off, and the
// claims already released stay released.
func (c *VolumeController) collectClaims(ctx context.Context, vol *v4.CSIVolume) error {
	tgs := store.Typed[*v4.TaskGroup](c.store, v4.KindTaskGroup)
	var gone []v4.VolumeClaim
	for _, cl := range vol.Status.Claims {
		// The store, not the cache: a task group created and claiming just now may not be
		// in the cache yet, and its claim must not go.
		tg, err := tgs.Get(ctx, vol.Metadata.Namespace, cl.TaskGroup)
		switch {
		case errors.Is(err, store.ErrNotFound):
			gone = append(gone, cl)
		case err != nil:
			return fmt.Errorf("task group %s of a claim: %w", cl.TaskGroup, err)
		case tg.Spec.Node != cl.Node:
			gone = append(gone, cl)
		}
	}
	var errs []error
	for _, cl := range gone {
		if err := c.release(ctx, vol, cl); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// release unpublishes claim cl and removes it from the stored volume, if it is still the
// same claim there.
func (c *VolumeController) release(ctx context.Context, vol *v4.CSIVolume, cl v4.VolumeClaim) error {
	// Read again: a claim released just before may have shared this one's publish.
	cur, err := store.Typed[*v4.CSIVolume](c.store, v4.KindVolume).Get(ctx, vol.Metadata.Namespace, vol.Metadata.Name)
	if err != nil {
		return fmt.Errorf("release the claim of task group %s: %w", cl.TaskGroup, err)
	}
	if err := volumes.Unpublish(ctx, c.calls, c.store, c.listNodes(), cur, cl); err != nil {
		return err
	}
	_, err = volumes.Update(ctx, c.store, vol.Metadata.Namespace, vol.Metadata.Name, func(cur *v4.CSIVolume) (bool, error) {
		have, ok := volumes.ClaimOf(cur, cl.TaskGroup)
		if !ok || have.Node != cl.Node || have.NodeID != cl.NodeID {
			return false, nil
		}
		return volumes.WithoutClaim(cur, cl.TaskGroup), nil
	})
	if err != nil {
		return fmt.Errorf("release the claim of task group %s: %w", cl.TaskGroup, err)
	}
	c.record(v4.Event{Type: v4.EventNormal, Reason: "ClaimReleased", Kind: v4.KindVolume, Namespace: vol.Metadata.Namespace,
		Name: vol.Metadata.Name, Message: fmt.Sprintf("released the claim of task group %s on node %s: the task group is gone from that node", cl.TaskGroup, cl.Node)})
	return nil
}

// claimNames lists claims as "task group (node, mode)".
func claimNames(claims []v4.VolumeClaim) string {
	parts := make([]string, len(claims))
	for i, cl := range claims {
		parts[i] = fmt.Sprintf("%s (node %s, %s)", cl.TaskGroup, cl.Node, cl.Mode)
	}
	return strings.Join(parts, ", ")
}
