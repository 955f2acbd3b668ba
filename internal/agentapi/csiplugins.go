package agentapi

import (
	"errors"
	"net/http"
	"reflect"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// handleAgentCSIPlugins sets the node's status.csiPlugins (PUT
// /v1/agent/nodes/{name}/csiplugins): the CSI plugins its agent found in its plugin
// directory (docs/volumes.md, "Plugins"), which the scheduler places csi volumes by and
// the volume controller calls. The agent sends the whole list when it changed, so the
// node is written only then. What a plugin says reaches the store through here: the
// list is checked field by field (names, sizes, counts, topology) first.
func (a *API) handleAgentCSIPlugins(w http.ResponseWriter, r *http.Request) error {
	body, err := a.bodies.Read(w, r)
	if err != nil {
		return err
	}
	var cp v4.AgentCSIPlugins
	if err := httpapi.DecodeStrict(body, &cp); err != nil {
		return httpapi.Errorf(http.StatusBadRequest, "the body is not a list of CSI plugins: %v", err)
	}
	if errs := v4.ValidateCSIPlugins(cp.Plugins); len(errs) > 0 {
		ae := httpapi.Errorf(http.StatusUnprocessableEntity, "the CSI plugins are invalid: %v", errs)
		ae.Details = errs
		return ae
	}
	if len(cp.Plugins) == 0 {
		cp.Plugins = nil // as a node without any is stored
	}
	name := r.PathValue("name")
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	for range agentWriteAttempts {
		n, err := a.nodes().Get(ctx, "", name)
		if err != nil {
			return httpapi.NodeError(name, err)
		}
		if reflect.DeepEqual(n.Status.CSIPlugins, cp.Plugins) {
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
		n.Status.CSIPlugins = cp.Plugins
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
	return httpapi.Errorf(http.StatusConflict, "node %s changed %d times while its CSI plugins were written; try again", name, agentWriteAttempts)
}
