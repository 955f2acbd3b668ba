package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	v4 "github.com/berthhq/berth/api/v4"
)

// CreateJoinToken makes a join token; the answer's Token is the whole token, shown once.
func (c *Client) CreateJoinToken(ctx context.Context, req v4.JoinTokenRequest) (*v4.JoinTokenInfo, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode join token request: %w", err)
	}
	var out v4.JoinTokenInfo
	if err := c.doJSON(ctx, request{method: http.MethodPost, path: "/v1/jointokens", body: body}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// JoinTokens lists the cluster's join tokens (without their secrets).
func (c *Client) JoinTokens(ctx context.Context) ([]v4.JoinTokenInfo, error) {
	return getItems[v4.JoinTokenInfo](ctx, c, "/v1/jointokens")
}

// RevokeJoinToken deletes a join token by id ("berth-abc123").
func (c *Client) RevokeJoinToken(ctx context.Context, id string) error {
	return c.deletePath(ctx, "/v1/jointokens/"+url.PathEscape(id))
}
