package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/berthhq/berth/internal/jointoken"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Join tokens (docs/security.md, Join tokens) are kept by id; the cluster stores only the
// SHA-256 of a token's secret, so reading etcd gives no usable token.
const joinTokenPrefix = prefix + "jointokens/"

// MaxJoinTokens bounds how many join tokens a cluster holds, so a loop of `berth token
// create` cannot fill etcd.
const MaxJoinTokens = 1000

// Roles of a join token: an agent token joins nodes; a server token also joins servers
// (which receive the cluster's CA and encryption keys), so it is the more powerful.
const (
	JoinRoleAgent  = "agent"
	JoinRoleServer = "server"
)

// JoinToken is what the cluster keeps of a join token.
type JoinToken struct {
	ID          string    `json:"id"`
	SecretHash  string    `json:"secretHash"`
	Role        string    `json:"role"`
	Description string    `json:"description,omitempty"`
	Created     time.Time `json:"created"`
	// Expires is when the token stops working; zero never.
	Expires time.Time `json:"expires,omitzero"`
}

// Expired reports whether the token no longer works at now.
func (t *JoinToken) Expired(now time.Time) bool { return !t.Expires.IsZero() && !now.Before(t.Expires) }

// Allows reports whether the token may join in role.
func (t *JoinToken) Allows(role string) bool {
	return t.Role == JoinRoleServer || t.Role == role
}

// CreateJoinToken stores a new token; an id in use is ErrAlreadyExists.
func (s *Store) CreateJoinToken(ctx context.Context, t *JoinToken) error {
	if err := jointoken.ValidID(t.ID); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if t.Role != JoinRoleAgent && t.Role != JoinRoleServer {
		return fmt.Errorf("%w: join token role %q: use %s or %s", ErrInvalid, t.Role, JoinRoleAgent, JoinRoleServer)
	}
	count, err := s.client.Get(ctx, joinTokenPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return fmt.Errorf("count join tokens: %w", wrapEtcd(err))
	}
	if count.Count >= MaxJoinTokens {
		return fmt.Errorf("%w: the cluster holds %d join tokens, the most it keeps: revoke some first", ErrInvalid, count.Count)
	}
	val, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("encode join token: %w", err)
	}
	key := joinTokenPrefix + t.ID
	txn, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(val))).
		Commit()
	if err != nil {
		return fmt.Errorf("store join token %s: %w", t.ID, wrapEtcd(err))
	}
	if !txn.Succeeded {
		return fmt.Errorf("join token %s: %w", t.ID, ErrAlreadyExists)
	}
	return nil
}

// JoinToken reads one token by id.
func (s *Store) JoinToken(ctx context.Context, id string) (*JoinToken, error) {
	if jointoken.ValidID(id) != nil {
		return nil, fmt.Errorf("join token %q: %w", id, ErrNotFound)
	}
	resp, err := s.client.Get(ctx, joinTokenPrefix+id)
	if err != nil {
		return nil, fmt.Errorf("read join token %s: %w", id, wrapEtcd(err))
	}
	if len(resp.Kvs) == 0 {
		return nil, fmt.Errorf("join token %s: %w", id, ErrNotFound)
	}
	var t JoinToken
	if err := json.Unmarshal(resp.Kvs[0].Value, &t); err != nil {
		return nil, fmt.Errorf("decode join token %s: %w", id, err)
	}
	return &t, nil
}

// JoinTokens lists every token, oldest first.
func (s *Store) JoinTokens(ctx context.Context) ([]*JoinToken, error) {
	resp, err := s.client.Get(ctx, joinTokenPrefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("list join tokens: %w", wrapEtcd(err))
	}
	out := make([]*JoinToken, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var t JoinToken
		if err := json.Unmarshal(kv.Value, &t); err != nil {
			return nil, fmt.Errorf("decode join token %s: %w", kv.Key, err)
		}
		out = append(out, &t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, nil
}

// DeleteJoinToken revokes a token; an unknown id is ErrNotFound.
func (s *Store) DeleteJoinToken(ctx context.Context, id string) error {
	if jointoken.ValidID(id) != nil {
		return fmt.Errorf("join token %q: %w", id, ErrNotFound)
	}
	resp, err := s.client.Delete(ctx, joinTokenPrefix+id)
	if err != nil {
		return fmt.Errorf("revoke join token %s: %w", id, wrapEtcd(err))
	}
	if resp.Deleted == 0 {
		return fmt.Errorf("join token %s: %w", id, ErrNotFound)
	}
	return nil
}

// CheckJoinToken authenticates a presented token for role: it must exist, match, not be
// expired, and allow the role. The error says which without echoing the secret.
func (s *Store) CheckJoinToken(ctx context.Context, tok jointoken.Token, role string, now time.Time) (*JoinToken, error) {
	t, err := s.JoinToken(ctx, tok.ID)
	if errors.Is(err, ErrNotFound) {
		return nil, ErrUnknownJoinToken
	}
	if err != nil {
		return nil, err
	}
	switch {
	case !tok.Matches(t.SecretHash):
		return nil, ErrUnknownJoinToken
	case t.Expired(now):
		return nil, fmt.Errorf("%w: join token berth-%s expired at %s", ErrJoinTokenRefused, t.ID, t.Expires.Format(time.RFC3339))
	case !t.Allows(role):
		return nil, fmt.Errorf("%w: join token berth-%s is an %s token; joining a %s needs a %s token", ErrJoinTokenRefused, t.ID, t.Role, role, JoinRoleServer)
	}
	return t, nil
}

// ErrJoinTokenRefused is a known token that cannot be used: expired, or of another role.
var ErrJoinTokenRefused = errors.New("join token refused")

// ErrUnknownJoinToken is a token the cluster does not know (never made, revoked, or with
// the wrong secret: the answer does not tell which).
var ErrUnknownJoinToken = errors.New("unknown or revoked join token")
