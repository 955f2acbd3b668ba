package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// ClusterInfo is GET /v1/cluster: the etcd members and which server leads (docs/ha.md).
type ClusterInfo struct {
	Self struct {
		ID     string `json:"id"`
		Member string `json:"member,omitempty"`
	} `json:"self"`
	Leader       string          `json:"leader"`
	LeaderError  string          `json:"leaderError,omitempty"`
	Etcd         string          `json:"etcd"`
	Members      []ClusterMember `json:"members"`
	MembersError string          `json:"membersError,omitempty"`
}

// ClusterMember is one etcd member.
type ClusterMember struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	PeerURLs   []string `json:"peerURLs"`
	ClientURLs []string `json:"clientURLs"`
	Learner    bool     `json:"learner,omitempty"`
	Started    bool     `json:"started"`
	Healthy    bool     `json:"healthy"`
	RaftLeader bool     `json:"raftLeader,omitempty"`
	Error      string   `json:"error,omitempty"`
}

// Cluster reads GET /v1/cluster from the current server.
func (c *Client) Cluster(ctx context.Context) (*ClusterInfo, error) {
	var info ClusterInfo
	if err := c.doJSON(ctx, request{method: http.MethodGet, path: "/v1/cluster"}, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// JoinCluster asks the server to add an etcd member (POST /v1/cluster/members) and
// returns the initial cluster the new member starts with. The client must carry the
// cluster's join token (WithBearerToken).
func (c *Client) JoinCluster(ctx context.Context, name, peerURL string) (string, error) {
	body, err := json.Marshal(map[string]string{"name": name, "peerURL": peerURL})
	if err != nil {
		return "", fmt.Errorf("encode the member: %w", err)
	}
	var out struct {
		InitialCluster string `json:"initialCluster"`
	}
	if err := c.doJSON(ctx, request{method: http.MethodPost, path: "/v1/cluster/members", body: body}, &out); err != nil {
		return "", err
	}
	if out.InitialCluster == "" {
		return "", fmt.Errorf("POST /v1/cluster/members: the answer has no initial cluster")
	}
	return out.InitialCluster, nil
}
