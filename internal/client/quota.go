package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/berthhq/berth/internal/quota"
)

// NamespaceLimits are what an administrator sets for a namespace (docs/api.md,
// "Namespace quotas"): storage limits (0: the cluster's default), a resource quota and
// limit defaults.
type NamespaceLimits struct {
	Objects       int64           `json:"objects,omitempty"`
	Bytes         int64           `json:"bytes,omitempty"`
	Resources     quota.List      `json:"resources,omitempty"`
	LimitDefaults *quota.Defaults `json:"limitDefaults,omitempty"`
}

// NamespaceQuota is GET /v1/namespaces/{ns}/quota: the limits in force, the storage
// usage, and what the namespace's objects ask of the cluster.
type NamespaceQuota struct {
	Namespace string          `json:"namespace"`
	Limits    NamespaceLimits `json:"limits"`
	Default   bool            `json:"default"`
	Usage     struct {
		Objects int64 `json:"objects"`
		Bytes   int64 `json:"bytes"`
	} `json:"usage"`
	ResourceUsage quota.List `json:"resourceUsage"`
}

func quotaPath(ns string) string {
	return "/v1/namespaces/" + url.PathEscape(nsOrDefault(ns)) + "/quota"
}

// NamespaceQuota reads ns's limits and usage.
func (c *Client) NamespaceQuota(ctx context.Context, ns string) (*NamespaceQuota, error) {
	var q NamespaceQuota
	if err := c.doJSON(ctx, request{method: http.MethodGet, path: quotaPath(ns)}, &q); err != nil {
		return nil, err
	}
	return &q, nil
}

// SetNamespaceQuota replaces ns's limits (administrators only); force sets a resource
// quota below the namespace's usage.
func (c *Client) SetNamespaceQuota(ctx context.Context, ns string, l NamespaceLimits, force bool) (*NamespaceQuota, error) {
	body, err := json.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("encode namespace limits: %w", err)
	}
	r := request{method: http.MethodPut, path: quotaPath(ns), body: body, contentType: "application/json"}
	if force {
		r.query = url.Values{"force": {"true"}}
	}
	var q NamespaceQuota
	if err := c.doJSON(ctx, r, &q); err != nil {
		return nil, err
	}
	return &q, nil
}

// ResetNamespaceQuota gives ns the cluster's defaults again: no resource quota.
func (c *Client) ResetNamespaceQuota(ctx context.Context, ns string) error {
	return c.doNoAnswer(ctx, request{method: http.MethodDelete, path: quotaPath(ns)})
}
