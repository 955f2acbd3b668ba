package store

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	v4 "github.com/berthhq/berth/api/v4"
)

// A node's name belongs to the key its agent joined with (docs/security.md, Node
// identity): the cluster keeps the SHA-256 of that public key, so a join token cannot
// obtain a certificate for a name another node holds, and with it that node's secrets.
const nodeKeyPrefix = prefix + "nodekeys/"

// ErrNodeNameTaken is a join for a node name that another key holds.
var ErrNodeNameTaken = errors.New("node name taken")

// ClaimNodeName records that name belongs to the key whose SPKI hash is keyHash, for a
// join: it succeeds when the name is free (no node of that name, no key recorded), or
// already this key's, or when takeover says an administrator allowed it (a join token
// bound to that name). A name held by another key, or a node registered before keys were
// recorded, is ErrNodeNameTaken.
func (s *Store) ClaimNodeName(ctx context.Context, name, keyHash string, takeover bool) error {
	if err := v4.CheckNodeName(name); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	key := nodeKeyPrefix + name
	if takeover {
		if _, err := s.client.Put(ctx, key, keyHash); err != nil {
			return fmt.Errorf("record the key of node %s: %w", name, wrapEtcd(err))
		}
		return nil
	}
	txn, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(objectKey(v4.KindNode, "", name)), "=", 0)).
		Then(clientv3.OpPut(key, keyHash)).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return fmt.Errorf("claim node name %s: %w", name, wrapEtcd(err))
	}
	if txn.Succeeded {
		return nil
	}
	if kvs := txn.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 && string(kvs[0].Value) == keyHash {
		return nil // the same key joins again (a lost certificate, a kept key)
	}
	return fmt.Errorf("%w: node %s exists and joined with another key", ErrNodeNameTaken, name)
}

// SetNodeKey records the key of a node's renewed certificate: the node proved it holds
// the name with its current certificate.
func (s *Store) SetNodeKey(ctx context.Context, name, keyHash string) error {
	if _, err := s.client.Put(ctx, nodeKeyPrefix+name, keyHash); err != nil {
		return fmt.Errorf("record the key of node %s: %w", name, wrapEtcd(err))
	}
	return nil
}

// ForgetNodeKey frees a deleted node's name for a new join.
func (s *Store) ForgetNodeKey(ctx context.Context, name string) error {
	if _, err := s.client.Delete(ctx, nodeKeyPrefix+name); err != nil {
		return fmt.Errorf("forget the key of node %s: %w", name, wrapEtcd(err))
	}
	return nil
}
