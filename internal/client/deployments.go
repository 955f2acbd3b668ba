package client

import (
	"context"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
)

// DeploymentHistory returns the revisions a deployment keeps, oldest first.
func (c *Client) DeploymentHistory(ctx context.Context, ns, name string) (*v4.DeploymentHistory, error) {
	path, err := objectPath(v4.KindDeployment, nsOrDefault(ns), name, "history")
	if err != nil {
		return nil, err
	}
	var h v4.DeploymentHistory
	if err := c.doJSON(ctx, request{method: http.MethodGet, path: path}, &h); err != nil {
		return nil, err
	}
	return &h, nil
}
