package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	v4 "github.com/berthhq/berth/api/v4"
)

// Nodes are cluster-scoped (docs/api.md, Nodes): these calls use /v1/nodes. The generic
// Get, List, Delete and Watch with v4.KindNode reach the same routes.

// Nodes returns every node, sorted by name.
func (c *Client) Nodes(ctx context.Context) ([]*v4.Node, error) {
	list, err := c.List(ctx, v4.KindNode, "")
	if err != nil {
		return nil, err
	}
	out := make([]*v4.Node, 0, len(list.Items))
	for _, o := range list.Items {
		n, err := asNode(o)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// Node returns one node.
func (c *Client) Node(ctx context.Context, name string) (*v4.Node, error) {
	return c.nodeCall(ctx, request{method: http.MethodGet, path: nodePath(name)})
}

// RegisterNode creates a node (409 when one of that name exists) and returns it as
// stored, defaults applied.
func (c *Client) RegisterNode(ctx context.Context, n *v4.Node) (*v4.Node, error) {
	body, err := json.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("encode node %s: %w", n.Metadata.Name, err)
	}
	return c.nodeCall(ctx, request{method: http.MethodPost, path: "/v1/nodes", body: body})
}

// UpdateNode replaces a node; its metadata.resourceVersion, when set, is a precondition.
func (c *Client) UpdateNode(ctx context.Context, n *v4.Node) (*v4.Node, error) {
	body, err := json.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("encode node %s: %w", n.Metadata.Name, err)
	}
	return c.nodeCall(ctx, request{method: http.MethodPut, path: nodePath(n.Metadata.Name), body: body})
}

// PatchNode applies a JSON merge patch (RFC 7386) to a node and returns the result.
// A metadata.resourceVersion in the patch makes it fail with 409 unless the node is at
// that version; without one the server retries lost races itself.
func (c *Client) PatchNode(ctx context.Context, name string, patch []byte) (*v4.Node, error) {
	return c.nodeCall(ctx, request{method: http.MethodPatch, path: nodePath(name), body: patch,
		contentType: "application/merge-patch+json"})
}

// DeleteNode removes a node and returns its last state.
func (c *Client) DeleteNode(ctx context.Context, name string, opts ...DeleteOption) (*v4.Node, error) {
	obj, err := c.Delete(ctx, v4.KindNode, "", name, opts...)
	if err != nil {
		return nil, err
	}
	return asNode(obj)
}

// WatchNodes streams node changes (see Watch): without rv, first an ADDED per node.
func (c *Client) WatchNodes(ctx context.Context, rv string) (<-chan WatchEvent, error) {
	return c.Watch(ctx, v4.KindNode, "", rv)
}

func nodePath(name string) string {
	p, _ := objectPath(v4.KindNode, "", name, "") // a valid kind: never fails
	return p
}

func (c *Client) nodeCall(ctx context.Context, r request) (*v4.Node, error) {
	obj, err := c.objectCall(ctx, r, v4.KindNode)
	if err != nil {
		return nil, err
	}
	return asNode(obj)
}

func asNode(o v4.Object) (*v4.Node, error) {
	n, ok := o.(*v4.Node)
	if !ok {
		return nil, fmt.Errorf("the server answered a %s where a node was expected", o.GetKind())
	}
	return n, nil
}

// NodeMetrics returns the Prometheus metrics of the node's agent, in the text format,
// read through the server (GET /v1/nodes/{name}/metrics).
func (c *Client) NodeMetrics(ctx context.Context, name string) ([]byte, error) {
	return c.metrics(ctx, "/v1/nodes/"+url.PathEscape(name)+"/metrics", "metrics of node "+name)
}
