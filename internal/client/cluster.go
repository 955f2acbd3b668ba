package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/berthhq/berth/api/cluster"
)

// Cluster reads GET /v1/cluster from the current server.
func (c *Client) Cluster(ctx context.Context) (*cluster.Info, error) {
	var info cluster.Info
	if err := c.doJSON(ctx, request{method: http.MethodGet, path: "/v1/cluster"}, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// JoinCluster asks the server to add an etcd member (POST /v1/cluster/members). The
// client must carry the cluster's join token (WithBearerToken).
func (c *Client) JoinCluster(ctx context.Context, name, peerURL string) (cluster.Joined, error) {
	body, err := json.Marshal(cluster.MemberAdd{Name: name, PeerURL: peerURL})
	if err != nil {
		return cluster.Joined{}, fmt.Errorf("encode the member: %w", err)
	}
	var out cluster.Joined
	if err := c.doJSON(ctx, request{method: http.MethodPost, path: "/v1/cluster/members", body: body}, &out); err != nil {
		return cluster.Joined{}, err
	}
	if out.InitialCluster == "" {
		return cluster.Joined{}, fmt.Errorf("POST /v1/cluster/members: the answer has no initial cluster")
	}
	return out, nil
}

// RecoverSpace asks the server to free etcd's space (POST /v1/cluster/recover): compact
// the history, defragment the members, disarm the NOSPACE alarm. It may take minutes on
// a large database.
func (c *Client) RecoverSpace(ctx context.Context) (*cluster.Recovery, error) {
	var out cluster.Recovery
	if err := c.doJSON(ctx, request{method: http.MethodPost, path: "/v1/cluster/recover"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RewrapSecrets asks the server to seal every secret again with the first key of the
// encryption key file (POST /v1/encryption/rewrap; docs/security.md).
func (c *Client) RewrapSecrets(ctx context.Context) (*cluster.Rewrapped, error) {
	var out cluster.Rewrapped
	if err := c.doJSON(ctx, request{method: http.MethodPost, path: "/v1/encryption/rewrap"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
