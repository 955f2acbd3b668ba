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
// /v1/agent/nodes/{name}/events): what the node's load-balancer group, the executor or
// another part of the agent needs an operator or a workload's owner to see. Events are
// queued and merged with their repeats, so an agent that repeats itself costs one record.
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
	rec, err := a.agentEventRecord(r, r.PathValue("name"), ev)
	if err != nil {
		return err
	}
	a.store.QueueEvent(rec)
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// agentEventRecord checks that node may write ev and returns the record that stores it:
// on the node, on a service of a load-balancer group, or on the owner of a task group the
// node runs.
func (a *API) agentEventRecord(r *http.Request, node string, ev v4.AgentEvent) (v4.Event, error) {
	switch ev.Kind {
	case v4.KindService:
		if err := a.checkEventService(r, ev); err != nil {
			return v4.Event{}, err
		}
		return v4.Event{Type: ev.Type, Reason: ev.Reason, Kind: v4.KindService, Namespace: ev.Namespace, Name: ev.Name,
			Node: node, Message: ev.Message}, nil
	case v4.KindTaskGroup:
		tg, err := a.eventTaskGroup(r, node, ev)
		if err != nil {
			return v4.Event{}, err
		}
		return taskGroupEventRecord(tg, ev), nil
	}
	return v4.Event{Type: ev.Type, Reason: ev.Reason, Kind: v4.KindNode, Name: node, Node: node, Message: ev.Message}, nil
}

// eventTaskGroup reads the task group an event of node is about, which must be bound to
// node: an agent writes only into the namespaces of the pods it runs.
func (a *API) eventTaskGroup(r *http.Request, node string, ev v4.AgentEvent) (*v4.TaskGroup, error) {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	obj, err := a.store.Get(ctx, v4.KindTaskGroup, ev.Namespace, ev.Name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, httpapi.Errorf(http.StatusNotFound, "taskgroup %s/%s does not exist", ev.Namespace, ev.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("read taskgroup %s/%s for an agent's event: %w", ev.Namespace, ev.Name, err)
	}
	tg, ok := obj.(*v4.TaskGroup)
	if !ok || tg.Spec.Node != node {
		return nil, httpapi.Errorf(http.StatusForbidden, "taskgroup %s/%s is not bound to node %s: an agent records events only of the task groups it runs",
			ev.Namespace, ev.Name, node)
	}
	return tg, nil
}

// taskGroupEventRecord records an event of a task group on its owner, as the server's
// own events of an instance are (NoIP): `berth describe` of the workload and `berth
// events` of its namespace show it, and the message names the instance. A task group
// without an owner keeps the event itself.
func taskGroupEventRecord(tg *v4.TaskGroup, ev v4.AgentEvent) v4.Event {
	rec := v4.Event{Type: ev.Type, Reason: ev.Reason, Kind: tg.Spec.Owner.Kind, Namespace: tg.Metadata.Namespace,
		Name: tg.Spec.Owner.Name, TaskGroup: tg.Metadata.Name, Node: tg.Spec.Node,
		Message: fmt.Sprintf("taskgroup %s/%s on node %s: %s", tg.Metadata.Namespace, tg.Metadata.Name, tg.Spec.Node, ev.Message)}
	if rec.Kind == "" || rec.Name == "" {
		rec.Kind, rec.Name = v4.KindTaskGroup, tg.Metadata.Name
	}
	return rec
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
