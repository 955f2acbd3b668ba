package client

import (
	"context"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
)

// AgentBusyPorts sets the node's status.busyPorts: the host ports other programs hold
// there (404 when the node was deleted).
func (c *Client) AgentBusyPorts(ctx context.Context, node string, ports []v4.BusyPort) error {
	if ports == nil {
		ports = []v4.BusyPort{}
	}
	return c.doNoAnswerJSON(ctx, http.MethodPut, agentNodePath(node)+"/busyports", v4.AgentBusyPorts{BusyPorts: ports}, "busy ports")
}
