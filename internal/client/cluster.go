package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
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
	Space        ClusterSpace    `json:"space"`
}

// ClusterSpace is etcd's space in GET /v1/cluster (docs/operations.md).
type ClusterSpace struct {
	NoSpace bool `json:"noSpace"`
	Alarms  []struct {
		Member string `json:"member"`
		Type   string `json:"type"`
	} `json:"alarms,omitempty"`
	AlarmsError    string `json:"alarmsError,omitempty"`
	Advice         string `json:"advice,omitempty"`
	LastCompaction *struct {
		Revision int64     `json:"revision"`
		Time     time.Time `json:"time"`
	} `json:"lastCompaction,omitempty"`
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
	// Its database: file size (what the quota bounds), the part in use, the quota.
	DBSize      int64 `json:"dbSize,omitempty"`
	DBSizeInUse int64 `json:"dbSizeInUse,omitempty"`
	DBQuota     int64 `json:"dbQuota,omitempty"`
}

// Cluster reads GET /v1/cluster from the current server.
func (c *Client) Cluster(ctx context.Context) (*ClusterInfo, error) {
	var info ClusterInfo
	if err := c.doJSON(ctx, request{method: http.MethodGet, path: "/v1/cluster"}, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// Joined is the answer of POST /v1/cluster/members: what the new member starts with.
type Joined struct {
	InitialCluster string `json:"initialCluster"`
	// EncryptionKeys is the cluster's encryption key file, which the new server keeps.
	EncryptionKeys string `json:"encryptionKeys"`
	// CACert and CAKey are the cluster CA (PEM), which the new server keeps.
	CACert string `json:"caCert"`
	CAKey  string `json:"caKey"`
}

// JoinCluster asks the server to add an etcd member (POST /v1/cluster/members). The
// client must carry the cluster's join token (WithBearerToken).
func (c *Client) JoinCluster(ctx context.Context, name, peerURL string) (Joined, error) {
	body, err := json.Marshal(map[string]string{"name": name, "peerURL": peerURL})
	if err != nil {
		return Joined{}, fmt.Errorf("encode the member: %w", err)
	}
	var out Joined
	if err := c.doJSON(ctx, request{method: http.MethodPost, path: "/v1/cluster/members", body: body}, &out); err != nil {
		return Joined{}, err
	}
	if out.InitialCluster == "" {
		return Joined{}, fmt.Errorf("POST /v1/cluster/members: the answer has no initial cluster")
	}
	return out, nil
}

// Recovery is the answer of POST /v1/cluster/recover.
type Recovery struct {
	CompactedTo int64 `json:"compactedTo"`
	Members     []struct {
		Name         string `json:"name"`
		Endpoint     string `json:"endpoint"`
		SizeBefore   int64  `json:"sizeBefore"`
		InUseBefore  int64  `json:"inUseBefore"`
		SizeAfter    int64  `json:"sizeAfter"`
		InUseAfter   int64  `json:"inUseAfter"`
		Quota        int64  `json:"quota"`
		Defragmented bool   `json:"defragmented"`
		Error        string `json:"error,omitempty"`
	} `json:"members"`
	AlarmBefore bool   `json:"alarmBefore"`
	Disarmed    bool   `json:"disarmed"`
	LiveData    bool   `json:"liveData"`
	Message     string `json:"message"`
}

// RecoverSpace asks the server to free etcd's space (POST /v1/cluster/recover): compact
// the history, defragment the members, disarm the NOSPACE alarm. It may take minutes on
// a large database.
func (c *Client) RecoverSpace(ctx context.Context) (*Recovery, error) {
	var out Recovery
	if err := c.doJSON(ctx, request{method: http.MethodPost, path: "/v1/cluster/recover"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Rewrapped is the answer of POST /v1/encryption/rewrap.
type Rewrapped struct {
	Key       string `json:"key"`
	Rewrapped int    `json:"rewrapped"`
}

// RewrapSecrets asks the server to seal every secret again with the first key of the
// encryption key file (POST /v1/encryption/rewrap; docs/security.md).
func (c *Client) RewrapSecrets(ctx context.Context) (*Rewrapped, error) {
	var out Rewrapped
	if err := c.doJSON(ctx, request{method: http.MethodPost, path: "/v1/encryption/rewrap"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
