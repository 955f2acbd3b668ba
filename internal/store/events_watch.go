package store

import (
	"context"
	"fmt"

	v4 "github.com/berthhq/berth/api/v4"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// WatchedEvent is one item of WatchEvents: a record, or, last in a bounded watch whose
// consumer fell behind, Err (a *FellBehindError).
type WatchedEvent struct {
	Event v4.Event
	Err   error
}

// WatchEvents streams records matching f that are written from now on: new ones and every
// merge of a repeat (a put of the record at its new place in the log). The deletes that
// moves and bounds cause are not sent. The channel is closed when ctx is done or the etcd
// watch ends. With Bounded, a consumer that falls behind gets one item with Err last
// instead of making etcd wait.
func (s *Store) WatchEvents(ctx context.Context, f v4.EventFilter, opts ...WatchOption) (<-chan WatchedEvent, error) {
	return s.WatchEventsAfter(ctx, f, 0, opts...)
}

// WatchEventsAfter is WatchEvents from the records written after revision after (a list's
// revision, so a reader lists first and misses nothing between the two), or from now when
// after is 0. A revision etcd no longer holds fails with ErrCompacted.
func (s *Store) WatchEventsAfter(ctx context.Context, f v4.EventFilter, after int64, opts ...WatchOption) (<-chan WatchedEvent, error) {
	if after < 0 {
		return nil, fmt.Errorf("watch events: %w: negative revision %d", ErrInvalid, after)
	}
	if after == 0 {
		// Start from the current revision so nothing recorded after the call is missed.
		resp, err := s.client.Get(ctx, eventLogPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return nil, fmt.Errorf("watch events: %w", wrapEtcd(err))
		}
		after = resp.Header.Revision
	} else if err := s.checkCompacted(ctx, eventLogPrefix, after+1); err != nil {
		return nil, fmt.Errorf("watch events after %d: %w", after, err)
	}
	wctx, stopWatch := context.WithCancel(ctx)
	wch := s.client.Watch(clientv3.WithRequireLeader(wctx), eventLogPrefix,
		clientv3.WithPrefix(), clientv3.WithRev(after+1), clientv3.WithFilterDelete())
	limit := watchLimit(opts)
	out := make(chan WatchedEvent, bufferFor(limit))
	go func() {
		defer close(out)
		defer stopWatch()
		behind := forward(ctx, s.log, wch, out, limit, after, func(ev *clientv3.Event) (WatchedEvent, bool) {
			r, ok := s.decodeRecord(ev.Kv)
			return WatchedEvent{Event: r}, ok && f.Match(r)
		}, nil, nil)
		if behind != nil {
			stopWatch() // drop etcd's watch before waiting for the consumer to take the end
			s.log.Info("event watch fell behind; ending it", "events", behind.Events, "bytes", behind.Bytes)
			sendLast(ctx, out, WatchedEvent{Err: behind})
		}
	}()
	return out, nil
}
