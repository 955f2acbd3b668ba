package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	v4 "github.com/berthhq/berth/api/v4"
)

// PriorityClasses lists the cluster's priority classes (docs/policy.md).
func (c *Client) PriorityClasses(ctx context.Context) ([]*v4.PriorityClass, error) {
	var out v4.PriorityClassList
	if err := c.doJSON(ctx, request{method: http.MethodGet, path: "/v1/priorityclasses"}, &out); err != nil {
		return nil, err
	}
	return out.Items, nil
}

// PriorityClass reads one class.
func (c *Client) PriorityClass(ctx context.Context, name string) (*v4.PriorityClass, error) {
	var out v4.PriorityClass
	return &out, c.doJSON(ctx, request{method: http.MethodGet, path: "/v1/priorityclasses/" + url.PathEscape(name)}, &out)
}

// PutPriorityClass creates or replaces a class (an administrator's right).
func (c *Client) PutPriorityClass(ctx context.Context, pc *v4.PriorityClass) (*v4.PriorityClass, error) {
	body, err := json.Marshal(pc)
	if err != nil {
		return nil, fmt.Errorf("encode priority class: %w", err)
	}
	var out v4.PriorityClass
	return &out, c.doJSON(ctx, request{method: http.MethodPut, path: "/v1/priorityclasses/" + url.PathEscape(pc.Metadata.Name),
		body: bytes.Clone(body), contentType: "application/json"}, &out)
}

// DeletePriorityClass deletes a class.
func (c *Client) DeletePriorityClass(ctx context.Context, name string) error {
	resp, err := c.do(ctx, request{method: http.MethodDelete, path: "/v1/priorityclasses/" + url.PathEscape(name)})
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
