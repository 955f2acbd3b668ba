package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/seal"
)

// Secrets are encrypted at rest (docs/security.md, Encryption at rest): the stored object
// and its submitted document are sealed with the store's keyring, bound to their key, so
// etcd, its backups and anyone reading it hold no plaintext. Values stored before
// encryption was on stay readable and are sealed by Rewrap or their next write.

// sealedKind reports whether the values of kind are sealed.
func sealedKind(kind v4.Kind) bool { return kind == v4.KindSecret }

// sealFor seals val, stored at key, when kind is sealed and the store has a keyring.
func (s *Store) sealFor(kind v4.Kind, key string, val []byte) []byte {
	if s.keyring == nil || !sealedKind(kind) {
		return val
	}
	return s.keyring.Seal(val, []byte(key))
}

// openValue returns the plaintext of a value stored at key: sealed ones are opened,
// others pass as they are.
func (s *Store) openValue(key, val []byte) ([]byte, error) {
	if _, ok := seal.Sealed(val); !ok {
		return val, nil
	}
	if s.keyring == nil {
		return nil, fmt.Errorf("%s is encrypted and this server has no encryption key", key)
	}
	plain, _, err := s.keyring.Open(val, key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return plain, nil
}

// loadKeyFile reads the key file at path, or writes it: with the keys of the cluster this
// member just joined, else with a new key (the first server of a cluster).
func (s *Store) loadKeyFile(path string) (*seal.Keyring, error) {
	var joined *seal.Keyring
	if s.member != nil && s.member.joined != nil && len(s.member.joined.EncryptionKeys) > 0 {
		r, err := seal.ParseKeyFile([]byte(s.member.joined.EncryptionKeys))
		if err != nil {
			return nil, fmt.Errorf("the encryption keys of the join answer: %w", err)
		}
		joined = r
	}
	r, created, err := seal.LoadOrCreateKeyFile(path, joined)
	if err != nil {
		return nil, err
	}
	if created {
		s.log.Info("encryption key file written", "path", path, "key", r.Primary(), "fromJoin", joined != nil)
	}
	return r, nil
}

// Keyring returns the keys that seal secrets (nil when encryption is off), for a joining
// server to receive.
func (s *Store) Keyring() *seal.Keyring { return s.keyring }

// canaryKey holds a value sealed by the cluster's key when encryption was first on: a
// server whose keyring cannot open it has the wrong key file and refuses to start,
// instead of sealing secrets no other server can read.
const canaryKey = prefix + "encryption/canary"

const canaryText = "berth encryption canary"

// checkKeyring writes the canary on first use and checks this server's keys open it.
func (s *Store) checkKeyring(ctx context.Context) error {
	if s.keyring == nil {
		return nil
	}
	sealed := s.keyring.Seal([]byte(canaryText), []byte(canaryKey))
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(canaryKey), "=", 0)).
		Then(clientv3.OpPut(canaryKey, string(sealed))).
		Else(clientv3.OpGet(canaryKey)).
		Commit()
	if err != nil {
		return fmt.Errorf("check encryption key: %w", wrapEtcd(err))
	}
	if resp.Succeeded {
		return nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return nil // deleted meanwhile; the next start writes it again
	}
	plain, _, err := s.keyring.Open(kvs[0].Value, []byte(canaryKey))
	if errors.Is(err, seal.ErrUnknownKey) {
		name, _ := seal.Sealed(kvs[0].Value)
		return fmt.Errorf("the cluster's secrets are encrypted with key %q, which this server's encryption key file lacks (its keys: %s); give it the cluster's key file (--encryption-key-file)", name, keyNames(s.keyring))
	}
	if err != nil || string(plain) != canaryText {
		return fmt.Errorf("this server's encryption key file does not open the cluster's data: %v", err)
	}
	return nil
}

func keyNames(r *seal.Keyring) string {
	var names []string
	for _, k := range r.Keys() {
		names = append(names, k.Name)
	}
	return strings.Join(names, ", ")
}

// Rewrap seals every secret (object and submitted document), the CA key and the canary again with the
// keyring's first key, so an old key can be dropped from the key files afterwards. Each
// write is conditional on the value it read, so a concurrent change is never undone (it
// was sealed with the first key already). It returns how many values it rewrote.
func (s *Store) Rewrap(ctx context.Context) (int, error) {
	if s.keyring == nil {
		return 0, errors.New("rewrap: this server has no encryption key")
	}
	n := 0
	for _, pfx := range []string{objectPrefix(v4.KindSecret, ""), prefix + "raw/" + string(v4.KindSecret) + "/", canaryKey, caKey} {
		resp, err := s.client.Get(ctx, pfx, clientv3.WithPrefix())
		if err != nil {
			return n, fmt.Errorf("rewrap: %w", wrapEtcd(err))
		}
		for _, kv := range resp.Kvs {
			if !s.keyring.NeedsRewrap(kv.Value) {
				continue
			}
			plain, err := s.openValue(kv.Key, kv.Value)
			if err != nil {
				return n, fmt.Errorf("rewrap: %w", err)
			}
			txn, err := s.client.Txn(ctx).
				If(clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision)).
				Then(clientv3.OpPut(string(kv.Key), string(s.keyring.Seal(plain, kv.Key)))).
				Commit()
			if err != nil {
				return n, fmt.Errorf("rewrap %s: %w", kv.Key, wrapEtcd(err))
			}
			if txn.Succeeded {
				n++
			}
		}
	}
	return n, nil
}
