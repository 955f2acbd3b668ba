package agentapi

import (
	"net/http"
	"reflect"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
)

// handleAgentRevocable sets the node's status.revocable (PUT
// /v1/agent/nodes/{name}/revocable): its lending report, which only the node's own agent
// sends (its certificate names the node), so no user token can raise what a node lends
// (docs/policy.md, "Revocable capacity"). The agent sends it when it moved or grows old.
func (a *API) handleAgentRevocable(w http.ResponseWriter, r *http.Request) error {
	body, err := a.bodies.Read(w, r)
	if err != nil {
		return err
	}
	var rep v4.RevocableStatus
	if err := httpapi.DecodeStrict(body, &rep); err != nil {
		return httpapi.Errorf(http.StatusBadRequest, "the body is not a revocable capacity report: %v", err)
	}
	if errs := v4.ValidateRevocableStatus(&rep); len(errs) > 0 {
		ae := httpapi.Errorf(http.StatusUnprocessableEntity, "the revocable capacity report is invalid: %v", errs)
		ae.Details = errs
		return ae
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	err = a.updateNode(ctx, r.PathValue("name"), "while its revocable capacity was written; try again", func(n *v4.Node) bool {
		if n.Status.Revocable != nil && reflect.DeepEqual(*n.Status.Revocable, rep) {
			return false
		}
		n.Status.Revocable = &rep
		return true
	})
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
