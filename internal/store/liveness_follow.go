package store

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/berthhq/berth/internal/ctxtime"
)

// AliveView is the set of alive nodes kept by one etcd watch of their alive keys, so that
// the node lifecycle's look every quarter TTL reads memory instead of listing every alive
// key: at 5,000 nodes the list, four times a TTL, was the largest cost of an idle
// leader after the heartbeats. Beats renew leases and write no key, so the watch is
// quiet while nodes stay alive: a key comes when a node becomes alive (or its lease
// moves) and goes when its lease expires or is revoked.
//
// The view may lag etcd by what the watch has not delivered yet. That is safe for its
// reader: a node seen alive a moment too long is marked Lost at the next look, and one
// seen not alive a moment too early is written Lost only if it still has no lease (the
// write's condition).
type AliveView struct {
	mu     sync.RWMutex
	alive  map[string]bool
	synced bool
}

// aliveRelist is the pause before the view lists the keys again after its watch failed.
const aliveRelist = time.Second

// FollowAlive starts the view and keeps it until ctx ends.
func (s *Store) FollowAlive(ctx context.Context) *AliveView {
	v := &AliveView{}
	go s.followAlive(ctx, v)
	return v
}

// Read calls f with the alive set while it holds the view (f must not keep the map),
// and reports false without calling f when the view has not listed the keys yet.
func (v *AliveView) Read(f func(alive map[string]bool)) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if !v.synced {
		return false
	}
	f(v.alive)
	return true
}

// followAlive lists the alive keys and follows their changes, listing again after a
// watch that fails (etcd compacted past it, or it was cut), until ctx ends.
func (s *Store) followAlive(ctx context.Context, v *AliveView) {
	for ctx.Err() == nil {
		if err := s.followAliveOnce(ctx, v); err != nil && ctx.Err() == nil {
			s.log.Warn("following the alive nodes", "err", err)
		}
		v.mu.Lock()
		v.synced = false // until the next list: a reader falls back to etcd
		v.mu.Unlock()
		ctxtime.Sleep(ctx, aliveRelist)
	}
}

func (s *Store) followAliveOnce(ctx context.Context, v *AliveView) error {
	resp, err := s.client.Get(ctx, alivePrefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return fmt.Errorf("list alive nodes: %w", wrapEtcd(err))
	}
	alive := make(map[string]bool, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		alive[strings.TrimPrefix(string(kv.Key), alivePrefix)] = true
	}
	v.mu.Lock()
	v.alive, v.synced = alive, true
	v.mu.Unlock()

	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range s.client.Watch(wctx, alivePrefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1)) {
		if err := wr.Err(); err != nil {
			return fmt.Errorf("watch alive nodes: %w", wrapEtcd(err))
		}
		v.mu.Lock()
		for _, ev := range wr.Events {
			name := strings.TrimPrefix(string(ev.Kv.Key), alivePrefix)
			if ev.Type == clientv3.EventTypeDelete {
				delete(v.alive, name)
			} else {
				v.alive[name] = true
			}
		}
		v.mu.Unlock()
	}
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("watch alive nodes: the watch ended")
}
