package client

import (
	"context"
	"net/http"
	"net/url"
)

// Custom resources (docs/api.md, "Custom resources") are free-form documents: they are
// answered as decoded JSON.

// CustomResourceDefinitions lists the cluster's custom resource definitions.
func (c *Client) CustomResourceDefinitions(ctx context.Context) ([]map[string]any, error) {
	return getItems[map[string]any](ctx, c, "/v1/customresourcedefinitions")
}

// CustomResourceDefinition reads one definition by name (plural.group).
func (c *Client) CustomResourceDefinition(ctx context.Context, name string) (map[string]any, error) {
	var out map[string]any
	return out, c.doJSON(ctx, request{method: http.MethodGet, path: "/v1/customresourcedefinitions/" + url.PathEscape(name)}, &out)
}

// CustomResources lists the resources of definition crd in ns, or in every namespace for "".
func (c *Client) CustomResources(ctx context.Context, crd, ns string) ([]map[string]any, error) {
	path := "/v1/" + url.PathEscape(crd)
	if ns != "" {
		path = "/v1/namespaces/" + url.PathEscape(ns) + "/" + url.PathEscape(crd)
	}
	return getItems[map[string]any](ctx, c, path)
}

// CustomResource reads one resource of definition crd.
func (c *Client) CustomResource(ctx context.Context, crd, ns, name string) (map[string]any, error) {
	var out map[string]any
	path := "/v1/namespaces/" + url.PathEscape(ns) + "/" + url.PathEscape(crd) + "/" + url.PathEscape(name)
	return out, c.doJSON(ctx, request{method: http.MethodGet, path: path}, &out)
}
