package client

import (
	"context"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
)

// TaskGroupUsage reads what the tasks of task group ns/name use now, measured by the
// agent of its node.
func (c *Client) TaskGroupUsage(ctx context.Context, ns, name string) (*v4.TaskGroupUsage, error) {
	path, err := objectPath(v4.KindTaskGroup, ns, name, "usage")
	if err != nil {
		return nil, err
	}
	var u v4.TaskGroupUsage
	if err := c.doJSON(ctx, request{method: http.MethodGet, path: path}, &u); err != nil {
		return nil, err
	}
	return &u, nil
}

// NodeUsage reads what node name uses now, measured by its agent, with what its task
// groups reserve beside it.
func (c *Client) NodeUsage(ctx context.Context, name string) (*v4.NodeUsage, error) {
	path, err := objectPath(v4.KindNode, "", name, "usage")
	if err != nil {
		return nil, err
	}
	var u v4.NodeUsage
	if err := c.doJSON(ctx, request{method: http.MethodGet, path: path}, &u); err != nil {
		return nil, err
	}
	return &u, nil
}
