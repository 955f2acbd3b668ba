package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Records live one hour. One lease is shared by the records of a minute, so recording does
// not cost a lease grant each time; a record thus lives between 1 h and 1 h + 1 min.
const (
	recordTTL        = time.Hour
	leaseShareWindow = time.Minute
)

// eventLease caches the lease shared by recent records.
type eventLease struct {
	mu      sync.Mutex
	id      clientv3.LeaseID
	granted time.Time
	seq     atomic.Uint64
}

func (s *Store) recordLease(ctx context.Context, fresh bool) (clientv3.LeaseID, error) {
	l := &s.events
	l.mu.Lock()
	defer l.mu.Unlock()
	if !fresh && l.id != 0 && time.Since(l.granted) < leaseShareWindow {
		return l.id, nil
	}
	resp, err := s.client.Grant(ctx, int64((recordTTL + leaseShareWindow).Seconds()))
	if err != nil {
		return 0, wrapEtcd(err)
	}
	l.id, l.granted = resp.ID, time.Now()
	return l.id, nil
}

// RecordEvent stores a record. A zero Time means now; an empty Type means Normal.
func (s *Store) RecordEvent(ctx context.Context, r v4.Event) error {
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	r.Time = r.Time.UTC()
	if r.Type == "" {
		r.Type = v4.EventNormal
	}
	if r.Namespace != "" {
		if err := checkName("namespace", r.Namespace); err != nil {
			return fmt.Errorf("record event: %w: %w", ErrInvalid, err)
		}
	}
	val, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("record event: %w", err)
	}
	key := eventKey(r.Namespace, r.Time.UnixNano(), s.events.seq.Add(1))
	for attempt := range 2 {
		lease, err := s.recordLease(ctx, attempt > 0)
		if err != nil {
			return fmt.Errorf("record event: %w", err)
		}
		_, err = s.client.Put(ctx, key, string(val), clientv3.WithLease(lease))
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			continue // the shared lease expired or was revoked: take a fresh one
		}
		if err != nil {
			return fmt.Errorf("record event: %w", wrapEtcd(err))
		}
		return nil
	}
	return fmt.Errorf("record event: lease lost twice")
}

// ListEvents returns the records matching f, oldest first.
func (s *Store) ListEvents(ctx context.Context, f v4.EventFilter) ([]v4.Event, error) {
	resp, err := s.client.Get(ctx, eventPrefix(f.Namespace), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("list events: %w", wrapEtcd(err))
	}
	out := make([]v4.Event, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var r v4.Event
		if err := json.Unmarshal(kv.Value, &r); err != nil {
			s.log.Warn("skipping undecodable event", "key", string(kv.Key), "err", err)
			continue
		}
		if f.Match(r) {
			out = append(out, r)
		}
	}
	// Keys are time-ordered within a namespace; across namespaces sort by time.
	slices.SortStableFunc(out, func(a, b v4.Event) int { return cmp.Compare(a.Time.UnixNano(), b.Time.UnixNano()) })
	return out, nil
}

// WatchEvents streams records matching f that are written from now on. The channel is
// closed when ctx is done or the etcd watch ends.
func (s *Store) WatchEvents(ctx context.Context, f v4.EventFilter) (<-chan v4.Event, error) {
	// Start from the current revision so nothing recorded after the call is missed.
	resp, err := s.client.Get(ctx, eventPrefix(f.Namespace), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return nil, fmt.Errorf("watch events: %w", wrapEtcd(err))
	}
	ctx, cancel := context.WithCancel(ctx)
	wch := s.client.Watch(clientv3.WithRequireLeader(ctx), eventPrefix(f.Namespace),
		clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1), clientv3.WithFilterDelete())
	out := make(chan v4.Event, watchBuffer)
	go func() {
		defer close(out)
		defer cancel()
		for wr := range wch {
			if err := wr.Err(); err != nil {
				s.log.Debug("event watch ended", "err", err)
				return
			}
			for _, ev := range wr.Events {
				var r v4.Event
				if err := json.Unmarshal(ev.Kv.Value, &r); err != nil || !f.Match(r) {
					continue
				}
				select {
				case out <- r:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}
