package agentapi

import (
	"errors"
	"fmt"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// handleAgentEvent records an event of the agent's own node (POST
// /v1/agent/nodes/{name}/events): what the node's load-balancer group or another part of
// the agent needs an operator to see. Events are queued and merged with their repeats,
// so an agent that repeats itself costs one record.
func (a *API) handleAgentEvent(w http.ResponseWriter, r *http.Request) error {
	body, err := a.bodies.Read(w, r)
	if err != nil {
		return err
	}
	var ev v4.AgentEvent
	if err := httpapi.DecodeStrict(body, &ev); err != nil {
		return httpapi.Errorf(http.StatusBadRequest, "the body is not an agent event: %v", err)
	}
	if err := ev.Validate(); err != nil {
		ae := httpapi.Errorf(http.StatusUnprocessableEntity, "the agent event is invalid: %v", err)
		ae.Details, _ = errors.AsType[v4.FieldErrors](err)
		return ae
	}
	node := r.PathValue("name")
	if ev.Kind == v4.KindService {
		if err := a.checkEventService(r, ev); err != nil {
			return err
		}
		a.store.QueueEvent(v4.Event{Type: ev.Type, Reason: ev.Reason, Kind: v4.KindService, Namespace: ev.Namespace, Name: ev.Name,
			Node: node, Message: ev.Message})
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	a.store.QueueEvent(v4.Event{Type: ev.Type, Reason: ev.Reason, Kind: v4.KindNode, Name: node, Node: node, Message: ev.Message})
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// checkEventService lets an agent write events only on services exported to a
// load-balancer group (the only ones a node serves on its own), so a node cannot write
// into the events of any namespace it likes. The server does not know which group a
// node serves; the service's being in one bounds it enough.
func (a *API) checkEventService(r *http.Request, ev v4.AgentEvent) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	obj, err := a.store.Get(ctx, v4.KindService, ev.Namespace, ev.Name)
	if errors.Is(err, store.ErrNotFound) {
		return httpapi.Errorf(http.StatusNotFound, "service %s/%s does not exist", ev.Namespace, ev.Name)
	}
	if err != nil {
		return fmt.Errorf("read service %s/%s for an agent's event: %w", ev.Namespace, ev.Name, err)
	}
	if svc, ok := obj.(*v4.Service); !ok || len(svc.LBGroups()) == 0 {
		return httpapi.Errorf(http.StatusForbidden, "service %s/%s is in no load-balancer group: an agent records events only of its node and of load-balancer group services", ev.Namespace, ev.Name)
	}
	return nil
}
