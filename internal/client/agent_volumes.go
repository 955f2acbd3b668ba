package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
)

// AgentClaimVolume claims a volume object for a task group of the calling node (the
// server knows the node by its certificate) and returns what the node's CSI calls need.
func (c *Client) AgentClaimVolume(ctx context.Context, req v4.CSIClaimRequest) (v4.CSIClaimGrant, error) {
	var out v4.CSIClaimGrant
	body, err := json.Marshal(req)
	if err != nil {
		return out, fmt.Errorf("encode volume claim: %w", err)
	}
	err = c.doJSON(ctx, request{method: http.MethodPost, path: "/v1/agent/volumes/claim", body: body}, &out)
	return out, err
}

// AgentReleaseVolume releases a task group's claim of a volume object.
func (c *Client) AgentReleaseVolume(ctx context.Context, req v4.CSIClaimRequest) error {
	return c.doNoAnswerJSON(ctx, http.MethodPost, "/v1/agent/volumes/release", req, "volume release")
}
