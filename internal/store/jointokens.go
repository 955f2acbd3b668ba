package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/jointoken"
)

// Join tokens (docs/security.md, Join tokens) are kept by id; the cluster stores only the
// SHA-256 of a token's secret, so reading etcd gives no usable token.
const joinTokenPrefix = prefix + "jointokens/"

// MaxJoinTokens bounds how many join tokens a cluster holds, so a loop of `berth token
// create` cannot fill etcd.
const MaxJoinTokens = 1000

// JoinToken is what the cluster keeps of a join token.
type JoinToken struct {
	ID          string    `json:"id"`
	SecretHash  string    `json:"secretHash"`
	Role        string    `json:"role"` // v4.JoinRoleAgent or v4.JoinRoleServer
	Description string    `json:"description,omitempty"`
	Created     time.Time `json:"created"`
	// Expires is when the token stops working; zero never.
	Expires time.Time `json:"expires,omitzero"`
	// Node, when set, is the one node name the token joins, even one another key held.
	Node string `json:"node,omitempty"`
}

// Expired reports whether the token no longer works at now.
func (t *JoinToken) Expired(now time.Time) bool { return !t.Expires.IsZero() && !now.Before(t.Expires) }

// Allows reports whether the token may join in role.
func (t *JoinToken) Allows(role string) bool {
	return t.Role == v4.JoinRoleServer || t.Role == role
}

// CreateJoinToken stores a new token; an id in use is ErrAlreadyExists.
func (s *Store) CreateJoinToken(ctx context.Context, t *JoinToken) error {
	if err := jointoken.ValidID(t.ID); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if t.Role != v4.JoinRoleAgent && t.Role != v4.JoinRoleServer {
		return fmt.Errorf("%w: join token role %q: use %s or %s", ErrInvalid, t.Role, v4.JoinRoleAgent, v4.JoinRoleServer)
	}
	return s.createBounded(ctx, joinTokenPrefix, t.ID, t, MaxJoinTokens, "join token")
}

// JoinToken reads one token by id.
func (s *Store) JoinToken(ctx context.Context, id string) (*JoinToken, error) {
	if jointoken.ValidID(id) != nil {
		return nil, fmt.Errorf("join token %q: %w", id, ErrNotFound)
	}
	var t JoinToken
	return &t, s.getJSON(ctx, joinTokenPrefix+id, "join token "+id, &t)
}

// JoinTokens lists every token, oldest first.
func (s *Store) JoinTokens(ctx context.Context) ([]*JoinToken, error) {
	out, err := listJSON[JoinToken](ctx, s, joinTokenPrefix)
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, err
}

// DeleteJoinToken revokes a token; an unknown id is ErrNotFound.
func (s *Store) DeleteJoinToken(ctx context.Context, id string) error {
	if jointoken.ValidID(id) != nil {
		return fmt.Errorf("join token %q: %w", id, ErrNotFound)
	}
	return s.deleteKey(ctx, joinTokenPrefix+id, "join token "+id)
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
		return nil, fmt.Errorf("%w: join token berth-%s is an %s token; joining a %s needs a %s token", ErrJoinTokenRefused, t.ID, t.Role, role, v4.JoinRoleServer)
	}
	return t, nil
}

// ErrJoinTokenRefused is a known token that cannot be used: expired, or of another role.
var ErrJoinTokenRefused = errors.New("join token refused")

// ErrUnknownJoinToken is a token the cluster does not know (never made, revoked, or with
// the wrong secret: the answer does not tell which).
var ErrUnknownJoinToken = errors.New("unknown or revoked join token")
