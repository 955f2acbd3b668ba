package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	v4 "github.com/berthhq/berth/api/v4"
)

// Moves, drains and engine maintenance (docs/maintenance.md).

// MoveTaskGroup asks for task group ns/name to move to node (any other node when
// empty); force moves an instance of a stateful workload too. 423 when another operation
// on its application is in progress.
func (c *Client) MoveTaskGroup(ctx context.Context, ns, name, node string, force bool) (*Operation, error) {
	return c.Operate(ctx, v4.KindTaskGroup, ns, name, "move", nil, v4.MoveRequest{Node: node, Force: force})
}

// DrainNode disables a node and moves its instances off it; force moves stateful ones too.
func (c *Client) DrainNode(ctx context.Context, name string, force bool) (*Operation, error) {
	var q url.Values
	if force {
		q = url.Values{"force": {"true"}}
	}
	return c.OperatePath(ctx, nodePath(name)+"/drain", q, nil, v4.KindNode)
}

// Engine returns the engine state.
func (c *Client) Engine(ctx context.Context) (v4.Engine, error) {
	var e v4.Engine
	err := c.doJSON(ctx, request{method: http.MethodGet, path: "/v1/engine"}, &e)
	return e, err
}

// SetMaintenance turns engine maintenance on (with a reason) or off.
func (c *Client) SetMaintenance(ctx context.Context, on bool, reason string) (v4.Engine, error) {
	body, err := json.Marshal(map[string]any{"maintenance": on, "reason": reason})
	if err != nil {
		return v4.Engine{}, fmt.Errorf("encode engine request: %w", err)
	}
	var e v4.Engine
	err = c.doJSON(ctx, request{method: http.MethodPut, path: "/v1/engine", body: body}, &e)
	return e, err
}
