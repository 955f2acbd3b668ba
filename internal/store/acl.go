package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/berthhq/berth/internal/acl"
)

// Users' tokens and policies (docs/security.md, Users and policies). A token is kept by
// id with the SHA-256 of its secret; a policy by name. The first start of a cluster
// creates one management token (BootstrapACL).
const (
	aclTokenPrefix  = prefix + "acl/tokens/"
	aclPolicyPrefix = prefix + "acl/policies/"
	aclBootstrapKey = prefix + "acl/bootstrapped"
)

// Bounds, so a loop of creations cannot fill etcd.
const (
	MaxACLTokens   = 10000
	MaxACLPolicies = 1000
)

// BootstrapACL creates the cluster's first management token, once in the cluster's life:
// it returns the token's secret and true the one time it does, and false afterwards.
func (s *Store) BootstrapACL(ctx context.Context, now time.Time) (acl.Secret, bool, error) {
	sec, err := acl.NewSecret()
	if err != nil {
		return acl.Secret{}, false, err
	}
	t := &acl.Token{ID: sec.ID, SecretHash: acl.HashOf(sec), Name: "bootstrap management token", Management: true, Created: now.UTC()}
	val, err := json.Marshal(t)
	if err != nil {
		return acl.Secret{}, false, fmt.Errorf("encode token: %w", err)
	}
	txn, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(aclBootstrapKey), "=", 0)).
		Then(clientv3.OpPut(aclBootstrapKey, now.UTC().Format(time.RFC3339)), clientv3.OpPut(aclTokenPrefix+t.ID, string(val))).
		Commit()
	if err != nil {
		return acl.Secret{}, false, fmt.Errorf("bootstrap the management token: %w", wrapEtcd(err))
	}
	return sec, txn.Succeeded, nil
}

// CreateACLToken stores a new token.
func (s *Store) CreateACLToken(ctx context.Context, t *acl.Token) error {
	if err := acl.ValidID(t.ID); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return s.createBounded(ctx, aclTokenPrefix, t.ID, t, MaxACLTokens, "token")
}

// ACLToken reads a token by id.
func (s *Store) ACLToken(ctx context.Context, id string) (*acl.Token, error) {
	var t acl.Token
	if acl.ValidID(id) != nil {
		return nil, fmt.Errorf("token %q: %w", id, ErrNotFound)
	}
	return &t, s.getJSON(ctx, aclTokenPrefix+id, "token "+id, &t)
}

// ACLTokens lists the tokens, oldest first.
func (s *Store) ACLTokens(ctx context.Context) ([]*acl.Token, error) {
	out, err := listJSON[acl.Token](ctx, s, aclTokenPrefix)
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, err
}

// DeleteACLToken revokes a token.
func (s *Store) DeleteACLToken(ctx context.Context, id string) error {
	if acl.ValidID(id) != nil {
		return fmt.Errorf("token %q: %w", id, ErrNotFound)
	}
	return s.deleteKey(ctx, aclTokenPrefix+id, "token "+id)
}

// PutACLPolicy creates or replaces a policy (validated by the caller).
func (s *Store) PutACLPolicy(ctx context.Context, p *acl.Policy) error {
	val, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encode policy: %w", err)
	}
	key := aclPolicyPrefix + p.Metadata.Name
	count, err := s.client.Get(ctx, aclPolicyPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return fmt.Errorf("count policies: %w", wrapEtcd(err))
	}
	if count.Count >= MaxACLPolicies {
		// Replacing one is fine; a new one is not.
		if cur, err := s.client.Get(ctx, key, clientv3.WithCountOnly()); err != nil || cur.Count == 0 {
			return fmt.Errorf("%w: the cluster holds %d policies, the most it keeps", ErrInvalid, count.Count)
		}
	}
	if _, err := s.client.Put(ctx, key, string(val)); err != nil {
		return fmt.Errorf("store policy %s: %w", p.Metadata.Name, wrapEtcd(err))
	}
	return nil
}

// ACLPolicy reads a policy by name.
func (s *Store) ACLPolicy(ctx context.Context, name string) (*acl.Policy, error) {
	var p acl.Policy
	return &p, s.getJSON(ctx, aclPolicyPrefix+name, "policy "+name, &p)
}

// ACLPolicies lists the policies by name.
func (s *Store) ACLPolicies(ctx context.Context) ([]*acl.Policy, error) {
	return listJSON[acl.Policy](ctx, s, aclPolicyPrefix)
}

// DeleteACLPolicy deletes a policy; tokens that name it lose what it granted.
func (s *Store) DeleteACLPolicy(ctx context.Context, name string) error {
	return s.deleteKey(ctx, aclPolicyPrefix+name, "policy "+name)
}

// createBounded stores v at prefix+id unless the id is taken or prefix holds max keys.
func (s *Store) createBounded(ctx context.Context, prefix, id string, v any, max int64, what string) error {
	count, err := s.client.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return fmt.Errorf("count %ss: %w", what, wrapEtcd(err))
	}
	if count.Count >= max {
		return fmt.Errorf("%w: the cluster holds %d %ss, the most it keeps: revoke some first", ErrInvalid, count.Count, what)
	}
	val, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", what, err)
	}
	txn, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(prefix+id), "=", 0)).
		Then(clientv3.OpPut(prefix+id, string(val))).
		Commit()
	if err != nil {
		return fmt.Errorf("store %s %s: %w", what, id, wrapEtcd(err))
	}
	if !txn.Succeeded {
		return fmt.Errorf("%s %s: %w", what, id, ErrAlreadyExists)
	}
	return nil
}

func (s *Store) getJSON(ctx context.Context, key, what string, v any) error {
	resp, err := s.client.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("read %s: %w", what, wrapEtcd(err))
	}
	if len(resp.Kvs) == 0 {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, v); err != nil {
		return fmt.Errorf("decode %s: %w", what, err)
	}
	return nil
}

func listJSON[T any](ctx context.Context, s *Store, prefix string) ([]*T, error) {
	resp, err := s.client.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, wrapEtcd(err))
	}
	out := make([]*T, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		v := new(T)
		if err := json.Unmarshal(kv.Value, v); err != nil {
			return nil, fmt.Errorf("decode %s: %w", kv.Key, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func (s *Store) deleteKey(ctx context.Context, key, what string) error {
	resp, err := s.client.Delete(ctx, key)
	if err != nil {
		return fmt.Errorf("delete %s: %w", what, wrapEtcd(err))
	}
	if resp.Deleted == 0 {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return nil
}
