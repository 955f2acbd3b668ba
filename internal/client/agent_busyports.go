package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
)

// AgentBusyPorts sets the node's status.busyPorts: the host ports other programs hold
// there (404 when the node was deleted).
func (c *Client) AgentBusyPorts(ctx context.Context, node string, ports []v4.BusyPort) error {
	if ports == nil {
		ports = []v4.BusyPort{}
	}
	body, err := json.Marshal(v4.AgentBusyPorts{BusyPorts: ports})
	if err != nil {
		return fmt.Errorf("encode busy ports: %w", err)
	}
	resp, err := c.do(ctx, request{method: http.MethodPut, path: agentNodePath(node) + "/busyports", body: body})
	if err != nil {
		return err
	}
	discardBody(resp)
	return nil
}
