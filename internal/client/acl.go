package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	v4 "github.com/berthhq/berth/api/v4"
)

// Users and policies (docs/security.md): the client's token is given with
// WithBearerToken.

// Whoami says who the client's token is.
func (c *Client) Whoami(ctx context.Context) (*v4.Whoami, error) {
	var out v4.Whoami
	return &out, c.doJSON(ctx, request{method: http.MethodGet, path: "/v1/acl/whoami"}, &out)
}

// CanI asks whether the client's token may do verb on kind in namespace.
func (c *Client) CanI(ctx context.Context, q v4.CanI) (*v4.CanI, error) {
	var out v4.CanI
	return &out, c.postJSON(ctx, "/v1/acl/can-i", q, &out)
}

// CreateACLToken makes a user's token; the answer's Secret is the token, shown once.
func (c *Client) CreateACLToken(ctx context.Context, req v4.ACLTokenRequest) (*v4.ACLTokenInfo, error) {
	var out v4.ACLTokenInfo
	return &out, c.postJSON(ctx, "/v1/acl/tokens", req, &out)
}

// ACLTokens lists the users' tokens (without their secrets).
func (c *Client) ACLTokens(ctx context.Context) ([]v4.ACLTokenInfo, error) {
	return getItems[v4.ACLTokenInfo](ctx, c, "/v1/acl/tokens")
}

// RevokeACLToken deletes a user's token by id ("berth-acl-abc123").
func (c *Client) RevokeACLToken(ctx context.Context, id string) error {
	return c.deletePath(ctx, "/v1/acl/tokens/"+url.PathEscape(id))
}

// CreateACLCertificate asks for a client certificate bound to the token id
// ("berth-acl-abc123") for the key of req's CSR (docs/security.md, "Client certificates").
func (c *Client) CreateACLCertificate(ctx context.Context, id string, req v4.ACLCertificateRequest) (*v4.ACLCertificate, error) {
	var out v4.ACLCertificate
	return &out, c.postJSON(ctx, "/v1/acl/tokens/"+url.PathEscape(id)+"/certificate", req, &out)
}

// PutACLPolicy creates or replaces the policy of an acl-policy document (YAML or JSON).
func (c *Client) PutACLPolicy(ctx context.Context, name string, doc []byte) error {
	return c.doNoAnswer(ctx, request{method: http.MethodPut, path: "/v1/acl/policies/" + url.PathEscape(name), body: doc, contentType: "application/yaml"})
}

// ACLPolicies lists the policies as the server stores them.
func (c *Client) ACLPolicies(ctx context.Context) ([]json.RawMessage, error) {
	return getItems[json.RawMessage](ctx, c, "/v1/acl/policies")
}

// DeleteACLPolicy deletes a policy.
func (c *Client) DeleteACLPolicy(ctx context.Context, name string) error {
	return c.deletePath(ctx, "/v1/acl/policies/"+url.PathEscape(name))
}

func (c *Client) postJSON(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return c.doJSON(ctx, request{method: http.MethodPost, path: path, body: body}, out)
}

// getItems reads the items of a list answer ({"items": [...]}) at path.
func getItems[T any](ctx context.Context, c *Client, path string) ([]T, error) {
	var out struct {
		Items []T `json:"items"`
	}
	if err := c.doJSON(ctx, request{method: http.MethodGet, path: path}, &out); err != nil {
		return nil, err
	}
	return out.Items, nil
}

func (c *Client) deletePath(ctx context.Context, path string) error {
	return c.doNoAnswer(ctx, request{method: http.MethodDelete, path: path})
}
