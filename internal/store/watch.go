package store

import (
	"context"
	"errors"
	"fmt"

	v4 "github.com/berthhq/berth/api/v4"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// EventType says what happened to an object in a watch.
type EventType string

// Watch event types (the same words as Kubernetes).
const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
	// Error is the last event of a bounded watch whose consumer fell behind: Object is
	// nil, Err is a *FellBehindError and Revision the last revision given before it.
	Error EventType = "ERROR"
	// Progress (only for a watch made WithProgress): every change up to Revision has been
	// sent; Object is nil.
	Progress EventType = "PROGRESS"
)

// progressOf makes a watch's Progress events, when it asked for them.
func progressOf(l WatchLimit) func(int64) Event {
	if !l.progress {
		return nil
	}
	return func(rev int64) Event { return Event{Type: Progress, Revision: rev} }
}

// RequestProgress asks etcd to tell every watch of this store how far it is: those made
// WithProgress then get a Progress event, once they have been sent every change.
func (s *Store) RequestProgress(ctx context.Context) error {
	if err := s.client.RequestProgress(clientv3.WithRequireLeader(ctx)); err != nil {
		return fmt.Errorf("request watch progress: %w", wrapEtcd(err))
	}
	return nil
}

// Event is one change seen by Watch. For Deleted, Object is the last stored state, with
// its resourceVersion set to the revision of the deletion (as Kubernetes does), so a client
// can resume a watch from any event's object.
type Event struct {
	Type     EventType `json:"type"`
	Object   v4.Object `json:"object"`
	Revision int64     `json:"-"`
	Err      error     `json:"-"`
	// RevisionEnd marks the last change of its revision (of one transaction, which may
	// write several objects): a reader that applies changes a revision at a time, as the
	// shared cache does, never shows half of a transaction. The initial ADDED events of a
	// watch from 0 do not carry it.
	RevisionEnd bool `json:"-"`
	// shared, when set (Share), is the event's wire line, encoded once for every stream
	// that sends it.
	shared *sharedLine
}

// watchBuffer lets the producer run a little ahead of a slow consumer.
const watchBuffer = 64

// Watch streams the changes of a kind in namespace ns ("" for all namespaces).
// fromRev 0 first sends an ADDED event for every existing object (read at revision R), then
// the changes after R; fromRev N sends the changes after revision N, or fails with
// ErrCompacted when etcd no longer has them. The channel is closed when ctx is done or the
// etcd watch ends (for instance when it is compacted mid-stream); the consumer then
// re-watches from the last revision it saw. With Bounded, a consumer that falls behind
// the live changes gets one Error event last instead of making etcd wait (the initial
// ADDED events are read already and never count against the limit).
func (s *Store) Watch(ctx context.Context, kind v4.Kind, ns string, fromRev int64, opts ...WatchOption) (<-chan Event, error) {
	limit := watchLimit(opts)
	if err := checkKey(kind, ns, ""); err != nil {
		return nil, fmt.Errorf("watch %s: %w", kind, err)
	}
	if fromRev < 0 {
		return nil, fmt.Errorf("watch %s: %w: negative revision %d", kind, ErrInvalid, fromRev)
	}
	var initial []v4.Object
	if fromRev == 0 {
		objs, rev, err := s.List(ctx, kind, ns)
		if err != nil {
			return nil, fmt.Errorf("watch: %w", err)
		}
		initial, fromRev = objs, rev
	} else if err := s.checkCompacted(ctx, objectPrefix(kind, ns), fromRev+1); err != nil {
		return nil, fmt.Errorf("watch %s from %d: %w", kind, fromRev, err)
	}
	wctx, stopWatch := context.WithCancel(ctx)
	wch := s.client.Watch(clientv3.WithRequireLeader(wctx), objectPrefix(kind, ns),
		clientv3.WithPrefix(), clientv3.WithRev(fromRev+1), clientv3.WithPrevKV())
	out := make(chan Event, bufferFor(limit))
	s.watches.add(kind, 1)
	go func() {
		defer close(out)
		defer stopWatch()
		defer s.watches.add(kind, -1)
		send := func(ev Event) bool {
			select {
			case out <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for _, obj := range initial {
			rev, _ := parseRev(obj.GetMeta().ResourceVersion)
			if !send(Event{Type: Added, Object: obj, Revision: rev}) {
				return
			}
		}
		behind := forward(ctx, s.log, wch, out, limit, fromRev, s.eventsOf(kind), markRevisionEnd, progressOf(limit))
		if behind != nil {
			stopWatch() // drop etcd's watch before waiting for the consumer to take the end
			s.log.Info("watch fell behind; ending it", "kind", kind, "namespace", ns, "events", behind.Events, "bytes", behind.Bytes)
			sendLast(ctx, out, Event{Type: Error, Revision: behind.Revision, Err: behind})
		}
	}()
	return out, nil
}

// eventsOf converts the etcd events of a watch of kind, skipping (with a warning) those
// that do not decode.
func (s *Store) eventsOf(kind v4.Kind) func(*clientv3.Event) (Event, bool) {
	return func(ev *clientv3.Event) (Event, bool) {
		e, err := s.convertEvent(kind, ev)
		if err != nil {
			s.log.Warn("watch: skipping undecodable object", "err", err)
			return Event{}, false
		}
		return e, true
	}
}

func markRevisionEnd(e *Event) { e.RevisionEnd = true }

func (s *Store) convertEvent(kind v4.Kind, ev *clientv3.Event) (Event, error) {
	switch {
	case ev.Type == clientv3.EventTypeDelete:
		if ev.PrevKv == nil {
			return Event{}, fmt.Errorf("delete of %s without its previous value", ev.Kv.Key)
		}
		obj, err := s.decodeObjectAt(kind, ev.PrevKv, ev.Kv.ModRevision)
		if err != nil {
			return Event{}, err
		}
		return Event{Type: Deleted, Object: obj, Revision: ev.Kv.ModRevision}, nil
	default:
		obj, err := s.decodeObject(kind, ev.Kv)
		if err != nil {
			return Event{}, err
		}
		t := Modified
		if ev.IsCreate() {
			t = Added
		}
		return Event{Type: t, Object: obj, Revision: ev.Kv.ModRevision}, nil
	}
}

// checkCompacted fails with ErrCompacted when revision rev is no longer in etcd's history,
// so callers (the API's 410) learn it before a stream starts. A revision in the future is
// fine: the watch waits for it.
func (s *Store) checkCompacted(ctx context.Context, key string, rev int64) error {
	_, err := s.client.Get(ctx, key, clientv3.WithPrefix(), clientv3.WithRev(rev), clientv3.WithCountOnly())
	switch {
	case err == nil, errors.Is(err, rpctypes.ErrFutureRev):
		return nil
	default:
		return wrapEtcd(err)
	}
}
