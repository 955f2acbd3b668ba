package agentapi

import (
	"errors"
	"net/http"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// handleAgentBusyPorts sets the node's status.busyPorts (PUT
// /v1/agent/nodes/{name}/busyports): the host ports other programs hold there, which the
// scheduler never gives out (docs/scheduling.md, "Busy ports"). The agent sends the
// whole list when it changed, so the node is written only then, and no event is
// recorded: what is busy is the node's state, not news.
func (a *API) handleAgentBusyPorts(w http.ResponseWriter, r *http.Request) error {
	body, err := a.bodies.Read(w, r)
	if err != nil {
		return err
	}
	var bp v4.AgentBusyPorts
	if err := httpapi.DecodeStrict(body, &bp); err != nil {
		return httpapi.Errorf(http.StatusBadRequest, "the body is not a list of busy ports: %v", err)
	}
	if errs := v4.ValidateBusyPorts(bp.BusyPorts); len(errs) > 0 {
		ae := httpapi.Errorf(http.StatusUnprocessableEntity, "the busy ports are invalid: %v", errs)
		ae.Details = errs
		return ae
	}
	if len(bp.BusyPorts) == 0 {
		bp.BusyPorts = nil // as a node without any is stored
	}
	name := r.PathValue("name")
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	for range agentWriteAttempts {
		n, err := a.nodes().Get(ctx, "", name)
		if err != nil {
			return httpapi.NodeError(name, err)
		}
		if slices.Equal(n.Status.BusyPorts, bp.BusyPorts) {
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
		n.Status.BusyPorts = bp.BusyPorts
		err = a.update(ctx, n)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return httpapi.NodeError(name, err)
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	return httpapi.Errorf(http.StatusConflict, "node %s changed %d times while its busy ports were written; try again", name, agentWriteAttempts)
}
