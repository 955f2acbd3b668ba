package client

import (
	"context"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
)

// AgentRevocable sets the node's status.revocable: what its non-revocable instances use
// and the operator's lending bounds (docs/policy.md, "Revocable capacity").
func (c *Client) AgentRevocable(ctx context.Context, node string, r v4.RevocableStatus) error {
	return c.doNoAnswerJSON(ctx, http.MethodPut, agentNodePath(node)+"/revocable", r, "revocable capacity")
}
