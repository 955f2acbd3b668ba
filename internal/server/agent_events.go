package server

import (
	"errors"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
)

// handleAgentEvent records an event of the agent's own node (POST
// /v1/agent/nodes/{name}/events): what the node's load-balancer group or another part of
// the agent needs an operator to see. Events are queued and merged with their repeats,
// so an agent that repeats itself costs one record.
func (s *Server) handleAgentEvent(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var ev v4.AgentEvent
	if err := decodeStrict(body, &ev); err != nil {
		s.writeError(w, r, errorf(http.StatusBadRequest, "the body is not an agent event: %v", err))
		return
	}
	if err := ev.Validate(); err != nil {
		ae := errorf(http.StatusUnprocessableEntity, "the agent event is invalid: %v", err)
		ae.Details, _ = errors.AsType[v4.FieldErrors](err)
		s.writeError(w, r, ae)
		return
	}
	node := r.PathValue("name")
	s.store.QueueEvent(v4.Event{Type: ev.Type, Reason: ev.Reason, Kind: v4.KindNode, Name: node, Node: node, Message: ev.Message})
	w.WriteHeader(http.StatusAccepted)
}
