package store

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A node's TTL follows the heartbeat interval its server gave its agent (docs/agent.md,
// Heartbeats). An etcd lease keeps the TTL it was granted, so a node's TTL changes by
// moving its alive key to a new lease: one write when the interval changes, none per
// beat. The key stays in place throughout (it is put again, never deleted), so the node
// is alive without a gap and the node lifecycle, which loses only a node without the key,
// sees nothing.

// leaseTTLTimeout bounds a change of TTL.
const leaseTTLTimeout = 5 * time.Second

// LeaseTTL returns the TTL of node's lease as this server knows it (false: it does not).
func (s *Store) LeaseTTL(node string) (time.Duration, bool) {
	s.alive.mu.Lock()
	defer s.alive.mu.Unlock()
	k, ok := s.alive.leases[node]
	return k.ttl, ok
}

// SetLeaseTTL gives node's lease the TTL hi (whole seconds, rounded up) when its TTL is
// under lo, or over hi and shrink; a TTL within [lo, hi] stays. A lease this server
// does not know is left alone (the node's next beat reads it). The common case, a TTL
// within the range, costs a map lookup.
func (s *Store) SetLeaseTTL(ctx context.Context, node string, lo, hi time.Duration, shrink bool) error {
	want := leaseSeconds(hi)
	s.alive.mu.Lock()
	k, ok := s.alive.leases[node]
	s.alive.mu.Unlock()
	if !ok {
		return nil
	}
	have := leaseSeconds(k.ttl)
	if have >= leaseSeconds(lo) && (have <= want || !shrink) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, leaseTTLTimeout)
	defer cancel()
	grant, err := s.client.Grant(ctx, want)
	if err != nil {
		return fmt.Errorf("ttl of node %s: %w", node, wrapEtcd(err))
	}
	key := aliveKey(node)
	// Only while the key still holds the lease this server renews: another server that
	// took the node's beats meanwhile, or a loss, wins, and the node's next beat here
	// reads the key again.
	txn, err := s.client.Txn(ctx).If(clientv3.Compare(clientv3.LeaseValue(key), "=", int64(k.id))).
		Then(clientv3.OpPut(key, "", clientv3.WithLease(grant.ID))).Commit()
	if err != nil {
		// etcd may have moved the key or not (a deadline that passed as it applied the
		// move): either lease may hold it, and revoking that one would make the node
		// Lost. Neither is revoked: the node's next beat reads the key again, and the
		// lease it does not hold expires by itself.
		s.alive.forgetLease(node, k.id)
		return fmt.Errorf("ttl of node %s: %w", node, wrapEtcd(err))
	}
	old := k.id
	if !txn.Succeeded {
		old = grant.ID
		s.alive.forgetLease(node, k.id)
	} else {
		s.alive.remember(node, grant.ID, time.Duration(want)*time.Second, time.Now())
	}
	// The lease the key left (or never took) holds nothing now.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	s.client.Revoke(rctx, old)
	cancel()
	return nil
}
