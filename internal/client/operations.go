package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	v4 "github.com/berthhq/berth/api/v4"
)

// Operation is the answer to a request that started an operation (202 Accepted): the
// object as stored, the operation and the watch URL that follows the object.
type Operation struct {
	Object    v4.Object
	Operation *v4.Operation
	Watch     string
}

// Operate POSTs body (JSON-encoded unless nil) to the subresource sub of an object
// (for example "scale" or "rollout/pause") and decodes the 202 answer.
func (c *Client) Operate(ctx context.Context, kind v4.Kind, ns, name, sub string, query url.Values, body any) (*Operation, error) {
	path, err := objectPath(kind, nsOrDefault(ns), name, sub)
	if err != nil {
		return nil, err
	}
	return c.operate(ctx, request{method: http.MethodPost, path: path, query: query}, body, kind)
}

// OperatePath is Operate for a path outside the namespaced objects (nodes, engine).
func (c *Client) OperatePath(ctx context.Context, path string, query url.Values, body any, want v4.Kind) (*Operation, error) {
	return c.operate(ctx, request{method: http.MethodPost, path: path, query: query}, body, want)
}

func (c *Client) operate(ctx context.Context, r request, body any, want v4.Kind) (*Operation, error) {
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("%s %s: encode body: %w", r.method, r.path, err)
		}
		r.body = b
	}
	var acc v4.Accepted
	if err := c.doJSON(ctx, r, &acc); err != nil {
		return nil, err
	}
	out := &Operation{Operation: acc.Operation, Watch: acc.Watch}
	if len(acc.Object) > 0 {
		obj, err := decodeObject(acc.Object, want)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", r.method, r.path, err)
		}
		out.Object = obj
	}
	return out, nil
}

// IsLocked reports whether err is the server's 423: another operation on the object is
// in progress.
func IsLocked(err error) bool { return StatusOf(err) == http.StatusLocked }
