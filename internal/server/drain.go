package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// handleNodeDrain starts a drain (docs/maintenance.md): POST /v1/nodes/{name}/drain
// [?force=true]. The node is disabled and annotated; the drain controller moves its
// instances off one at a time and ends the OpDrain with a Drained event. A second drain
// while one runs gets 423.
func (s *Server) handleNodeDrain(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	force, err := httpapi.BoolParam(r.URL.Query().Get("force"), "force")
	if err != nil {
		return err
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	if _, err := s.nodes().Get(ctx, "", name); err != nil {
		return httpapi.NodeError(name, err)
	}
	mode, msg := v4.DrainNormal, "drain node "+name
	if force {
		mode, msg = v4.DrainForce, msg+" (forced: stateful instances move too)"
	}
	op := &v4.Operation{Type: v4.OpDrain, Kind: v4.KindNode, Name: name, Message: msg}
	if err := s.store.BeginOperation(ctx, "", name, *op); err != nil {
		return err
	}
	n, err := s.markDraining(ctx, name, mode)
	if err != nil {
		_ = s.store.EndOperation(context.WithoutCancel(ctx), v4.KindNode, "", name, v4.OpDrain)
		return httpapi.NodeError(name, err)
	}
	s.record(n, "DrainRequested", "disabled and being drained")
	writeAccepted(w, n, op)
	return nil
}

// markDraining disables the node and sets its drain annotation, retrying lost races
// with the agent's heartbeats.
func (s *Server) markDraining(ctx context.Context, name, mode string) (*v4.Node, error) {
	for range patchAttempts {
		n, err := s.nodes().Get(ctx, "", name)
		if err != nil {
			return nil, err
		}
		n.Spec.Disabled = true
		if n.Metadata.Annotations == nil {
			n.Metadata.Annotations = map[string]string{}
		}
		n.Metadata.Annotations[v4.DrainAnnotation] = mode
		err = s.update(ctx, n)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return n, nil
	}
	return nil, fmt.Errorf("drain node %s: %w (it changed %d times meanwhile)", name, store.ErrConflict, patchAttempts)
}
