package agentapi

import (
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
)

// handleAgentBusyPorts sets the node's status.busyPorts (PUT
// /v1/agent/nodes/{name}/busyports): the host ports other programs hold there, which the
// scheduler never gives out (docs/scheduling.md, "Busy ports"). The agent sends the
// whole list when it changed, so the node is written only then, and no event is
// recorded: what is busy is the node's state, not news.
func (a *API) handleAgentBusyPorts(w http.ResponseWriter, r *http.Request) error {
	return nodeList[v4.AgentBusyPorts, v4.BusyPort]{
		what:     "busy ports",
		items:    func(b *v4.AgentBusyPorts) []v4.BusyPort { return b.BusyPorts },
		validate: v4.ValidateBusyPorts,
		field:    func(s *v4.NodeStatus) *[]v4.BusyPort { return &s.BusyPorts },
	}.put(a, w, r)
}
