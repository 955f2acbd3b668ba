package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	v4 "github.com/berthhq/berth/api/v4"
)

// Node liveness (docs/store.md, "Node liveness"). An agent's heartbeat renews an etcd
// lease that holds its node's alive key, /berth/v1/alive/{node}, instead of writing the
// node: a lease renewal is no write to the keyspace (no revision, nothing in etcd's
// history or against its space quota), so thousands of nodes beating every few seconds
// cost etcd no space. The key is written only when a node becomes alive (its first beat,
// or one after its lease expired), and goes away by itself one TTL after the last beat.
// Leases live in etcd, not in a server: a beat through any server counts, and a change of
// berth's leader loses nothing (etcd extends every lease when its own leader changes).

const alivePrefix = prefix + "alive/"

func aliveKey(node string) string { return alivePrefix + node }

// liveness is what this server knows of the leases it renews, so that a beat is one
// renewal and no read. An entry is checked against etcd again after aliveRecheck: a key
// deleted by hand while its lease lived would otherwise leave a beating node not alive.
type liveness struct {
	mu     sync.Mutex
	leases map[string]knownLease
}

type knownLease struct {
	id      clientv3.LeaseID
	checked time.Time     // when the key was last read, or written
	renewed time.Time     // when the last renewal that etcd answered was sent
	ttl     time.Duration // the lease's TTL
}

// aliveRecheck is how long a beat trusts that a renewed lease still holds its key. Only
// a key deleted by hand escapes the renewals (a deleted node's lease is revoked, which
// the next round sees), so the check is rare: at 5,000 nodes a minute was 83 reads a
// second.
const aliveRecheck = 5 * time.Minute

// lease returns node's lease if this server knows it and read its key within
// aliveRecheck.
func (l *liveness) lease(node string, now time.Time) (clientv3.LeaseID, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k, ok := l.leases[node]
	if !ok || now.Sub(k.checked) > aliveRecheck {
		return 0, false
	}
	return k.id, true
}

func (l *liveness) remember(node string, id clientv3.LeaseID, ttl time.Duration, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.leases == nil {
		l.leases = map[string]knownLease{}
	}
	l.leases[node] = knownLease{id: id, checked: now, renewed: now, ttl: ttl}
}

// fresh reports whether node's lease is still id and, renewed when this server last saw,
// cannot have expired by before (etcd counts a TTL from when it got the renewal, after it
// was sent).
func (l *liveness) fresh(node string, id clientv3.LeaseID, before time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	k, ok := l.leases[node]
	return ok && k.id == id && before.Before(k.renewed.Add(k.ttl))
}

// renewed records that a renewal of node's lease sent at sent was answered.
func (l *liveness) renewed(node string, id clientv3.LeaseID, sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if k, ok := l.leases[node]; ok && k.id == id && sent.After(k.renewed) {
		k.renewed = sent
		l.leases[node] = k
	}
}

// forgetLease forgets node's lease if it is still id (a newer one stays).
func (l *liveness) forgetLease(node string, id clientv3.LeaseID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if k, ok := l.leases[node]; ok && k.id == id {
		delete(l.leases, node)
	}
}

func (l *liveness) forget(node string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.leases, node)
}

// ForgetLeases forgets every node lease this store renews, for a caller that wiped etcd's
// keys behind its back (tests): the next beat of each node reads etcd again.
func (s *Store) ForgetLeases() { s.alive.reset() }

// reset forgets every lease (tests that wipe etcd).
func (l *liveness) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leases = nil
}

// RenewKnown is a beat's fast path: when this server knows node's lease, it queues the
// lease's renewal for the next round and reports known, without waiting for etcd or
// taking a context. Otherwise the caller beats with Beat, which reads etcd.
func (s *Store) RenewKnown(node string) (known bool, err error) {
	if err := checkName("node", node); err != nil {
		return false, fmt.Errorf("heartbeat: %w", err)
	}
	id, ok := s.alive.lease(node, time.Now())
	if !ok {
		return false, nil
	}
	if err := s.renewals.ask(node, id); err != nil {
		return true, fmt.Errorf("heartbeat of node %s: %w", node, err)
	}
	return true, nil
}

// Beat keeps node alive for ttl from now (rounded up to whole seconds, etcd's unit). It
// reports fresh when the node was not alive before this beat: its alive key was created,
// so the caller should make sure the node says Ready.
//
// A beat of a node whose lease this server knows returns at once: the renewal goes in
// the next round (liveness_batch.go). When the round finds the lease gone (the node was
// silent a TTL, or was marked Lost), it forgets it, and the node's next beat checks etcd
// itself and makes the node alive again.
func (s *Store) Beat(ctx context.Context, node string, ttl time.Duration) (fresh bool, err error) {
	if known, err := s.RenewKnown(node); known || err != nil {
		return false, err
	}
	key := aliveKey(node)
	for range maxRetries {
		resp, err := s.client.Get(ctx, key)
		if err != nil {
			return false, fmt.Errorf("heartbeat of node %s: %w", node, wrapEtcd(err))
		}
		cmp := clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
		if len(resp.Kvs) == 1 {
			kv := resp.Kvs[0]
			// Another server keeps it alive (the agent moved), or this one did until it
			// checked the key again: renew that lease (on the stream for leases that may
			// have expired).
			if kv.Lease != 0 {
				// The lease keeps the TTL it was granted (another server's may differ):
				// SetLeaseTTL changes it.
				had, err := s.renewer.renewRisky(ctx, s.client, clientv3.LeaseID(kv.Lease))
				if err != nil {
					return false, err
				}
				if had > 0 {
					s.alive.remember(node, clientv3.LeaseID(kv.Lease), had, time.Now())
					return false, nil
				}
			}
			cmp = clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)
		}
		grant, err := s.client.Grant(ctx, leaseSeconds(ttl))
		if err != nil {
			return false, fmt.Errorf("heartbeat of node %s: %w", node, wrapEtcd(err))
		}
		txn, err := s.client.Txn(ctx).If(cmp).Then(clientv3.OpPut(key, "", clientv3.WithLease(grant.ID))).Commit()
		if err != nil || !txn.Succeeded {
			// Lost a race with another server's beat of the same node: use its lease.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			s.client.Revoke(rctx, grant.ID)
			cancel()
			if err != nil {
				return false, fmt.Errorf("heartbeat of node %s: %w", node, wrapEtcd(err))
			}
			continue
		}
		s.alive.remember(node, grant.ID, ttl, time.Now())
		return true, nil
	}
	return false, fmt.Errorf("heartbeat of node %s: %w (its alive key changed %d times)", node, ErrConflict, maxRetries)
}

// leaseSeconds is ttl in whole seconds, rounded up, at least 1.
func leaseSeconds(ttl time.Duration) int64 {
	return max(1, int64(math.Ceil(ttl.Seconds())))
}

// AliveNodes returns the nodes whose lease is live.
func (s *Store) AliveNodes(ctx context.Context) (map[string]bool, error) {
	resp, err := s.client.Get(ctx, alivePrefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, fmt.Errorf("list alive nodes: %w", wrapEtcd(err))
	}
	out := make(map[string]bool, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), alivePrefix)] = true
	}
	return out, nil
}

// LastBeat estimates when node last beat: the renewal that left its lease's remaining
// time, or the zero time when it is not alive.
func (s *Store) LastBeat(ctx context.Context, node string) (time.Time, error) {
	resp, err := s.client.Get(ctx, aliveKey(node))
	if err != nil {
		return time.Time{}, fmt.Errorf("liveness of node %s: %w", node, wrapEtcd(err))
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].Lease == 0 {
		return time.Time{}, nil
	}
	ttl, err := s.client.TimeToLive(ctx, clientv3.LeaseID(resp.Kvs[0].Lease))
	if err != nil {
		return time.Time{}, fmt.Errorf("liveness of node %s: %w", node, wrapEtcd(err))
	}
	if ttl.TTL <= 0 {
		return time.Time{}, nil
	}
	return time.Now().Add(-time.Duration(ttl.GrantedTTL-ttl.TTL) * time.Second).UTC(), nil
}

// ForgetNode ends a node's liveness (its node was deleted): its lease is revoked.
func (s *Store) ForgetNode(ctx context.Context, node string) error {
	s.alive.forget(node)
	resp, err := s.client.Get(ctx, aliveKey(node))
	if err != nil {
		return fmt.Errorf("liveness of node %s: %w", node, wrapEtcd(err))
	}
	if len(resp.Kvs) == 0 {
		return nil
	}
	if id := clientv3.LeaseID(resp.Kvs[0].Lease); id != 0 {
		if _, err := s.client.Revoke(ctx, id); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return fmt.Errorf("liveness of node %s: %w", node, wrapEtcd(err))
		}
	}
	if _, err := s.client.Delete(ctx, aliveKey(node)); err != nil {
		return fmt.Errorf("liveness of node %s: %w", node, wrapEtcd(err))
	}
	return nil
}

// UpdateUnlessAlive writes n (with its status, as read: ResourceVersion is required)
// only if it did not change since and its node has no live lease. The node lifecycle
// marks a silent node Lost with it: a beat that made the node alive again in between
// wins, and the node is not lost. ErrConflict when either changed.
func (s *Store) UpdateUnlessAlive(ctx context.Context, n *v4.Node) error {
	if n.Metadata.ResourceVersion == "" {
		return fmt.Errorf("update node %s: no resource version", n.Metadata.Name)
	}
	return s.update(ctx, n, Raw{}, clientv3.Compare(clientv3.CreateRevision(aliveKey(n.Metadata.Name)), "=", 0))
}
