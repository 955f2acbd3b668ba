package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	v4 "github.com/berthhq/berth/api/v4"
)

// engineKey holds the cluster-wide engine state (maintenance mode).
const engineKey = prefix + "engine"

// engineCacheTTL is how long Engine answers from memory. Every write request and every
// reconcile asks, so a read per request would double etcd's load; a second of staleness
// on other servers is the price (this server's own SetEngine is seen at once).
const engineCacheTTL = time.Second

// engineCache remembers the last engine state read.
type engineCache struct {
	mu   sync.Mutex
	val  v4.Engine
	read time.Time
}

// Engine returns the engine state, from a cache at most engineCacheTTL old. No state
// stored means maintenance off.
func (s *Store) Engine(ctx context.Context) (v4.Engine, error) {
	c := &s.engine
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.read.IsZero() && time.Since(c.read) < engineCacheTTL {
		return c.val, nil
	}
	resp, err := s.client.Get(ctx, engineKey)
	if err != nil {
		return v4.Engine{}, fmt.Errorf("read engine state: %w", wrapEtcd(err))
	}
	var e v4.Engine
	if len(resp.Kvs) > 0 {
		if err := json.Unmarshal(resp.Kvs[0].Value, &e); err != nil {
			return v4.Engine{}, fmt.Errorf("decode engine state: %w", err)
		}
	}
	c.val, c.read = e, time.Now()
	return e, nil
}

// InMaintenance reports whether the engine is in maintenance mode. A failed read counts
// as off: controllers then behave as usual, and the write they attempt meets the same
// unavailable etcd.
func (s *Store) InMaintenance(ctx context.Context) (v4.Engine, bool) {
	e, err := s.Engine(ctx)
	if err != nil {
		s.log.Warn("cannot read maintenance mode; assuming off", "err", err)
		return v4.Engine{}, false
	}
	return e, e.Maintenance
}

// SetEngine stores the engine state. Since is set to now when maintenance changes and
// kept otherwise. It returns the state stored.
func (s *Store) SetEngine(ctx context.Context, e v4.Engine) (v4.Engine, error) {
	c := &s.engine
	c.mu.Lock()
	defer c.mu.Unlock()
	for range maxRetries {
		resp, err := s.client.Get(ctx, engineKey)
		if err != nil {
			return v4.Engine{}, fmt.Errorf("read engine state: %w", wrapEtcd(err))
		}
		var cur v4.Engine
		var rev int64
		if len(resp.Kvs) > 0 {
			rev = resp.Kvs[0].ModRevision
			if err := json.Unmarshal(resp.Kvs[0].Value, &cur); err != nil {
				return v4.Engine{}, fmt.Errorf("decode engine state: %w", err)
			}
		}
		e.Since = cur.Since
		if e.Maintenance != cur.Maintenance || e.Since.IsZero() {
			e.Since = time.Now().UTC().Truncate(time.Second)
		}
		val, err := json.Marshal(e)
		if err != nil {
			return v4.Engine{}, fmt.Errorf("encode engine state: %w", err)
		}
		txn, err := s.client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(engineKey), "=", rev)).
			Then(clientv3.OpPut(engineKey, string(val))).Commit()
		if err != nil {
			return v4.Engine{}, fmt.Errorf("write engine state: %w", wrapEtcd(err))
		}
		if txn.Succeeded {
			c.val, c.read = e, time.Now()
			return e, nil
		}
	}
	return v4.Engine{}, fmt.Errorf("write engine state: %w (gave up after %d concurrent writes)", ErrConflict, maxRetries)
}
