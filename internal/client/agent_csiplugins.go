package client

import (
	"context"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
)

// AgentCSIPlugins sets the node's status.csiPlugins: the CSI plugins its agent found
// (404 when the node was deleted).
func (c *Client) AgentCSIPlugins(ctx context.Context, node string, plugins []v4.CSIPlugin) error {
	if plugins == nil {
		plugins = []v4.CSIPlugin{}
	}
	return c.doNoAnswerJSON(ctx, http.MethodPut, agentNodePath(node)+"/csiplugins", v4.AgentCSIPlugins{Plugins: plugins}, "CSI plugins")
}
