package agentapi

import (
	"context"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/volumes"
)

// handleAgentVolumeRelease releases a task group's claim of a volume once the node
// unpublished it: the plugin's ControllerUnpublish from the node when the claim made a
// publish no other claim of the node shares, then the claim is removed (204). Releasing
// a claim that is not there is a success, so an agent may release again after a
// failure; the task group itself may be gone already. 404: no such volume; 403: the
// claim is another node's; 502 (or 422 for the plugin's refusal): the unpublish failed,
// and the claim stays until a release succeeds.
func (a *API) handleAgentVolumeRelease(w http.ResponseWriter, r *http.Request) error {
	var req v4.CSIClaimRequest
	if err := a.decodeClaim(w, r, &req); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), claimTimeout)
	defer cancel()
	node := httpapi.NodeOf(r)
	vol, err := a.volume(ctx, req)
	if err != nil {
		return err
	}
	c, ok := volumes.ClaimOf(vol, req.TaskGroup)
	if !ok {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	if c.Node != node {
		return httpapi.Errorf(http.StatusForbidden, "the claim of task group %s/%s on volume %s is node %s's, not %s's",
			req.Namespace, req.TaskGroup, req.Volume, c.Node, node)
	}
	if err := volumes.Unpublish(ctx, a.calls, a.store, a.listNodes(), vol, c); err != nil {
		return callError(err)
	}
	if _, err := volumes.Update(ctx, a.store, req.Namespace, req.Volume, func(cur *v4.CSIVolume) (bool, error) {
		have, ok := volumes.ClaimOf(cur, req.TaskGroup)
		if !ok || have.Node != node {
			return false, nil
		}
		return volumes.WithoutClaim(cur, req.TaskGroup), nil
	}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
