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
)

// Event is one change seen by Watch. For Deleted, Object is the last stored state, with
// its resourceVersion set to the revision of the deletion (as Kubernetes does), so a client
// can resume a watch from any event's object.
type Event struct {
	Type     EventType `json:"type"`
	Object   v4.Object `json:"object"`
	Revision int64     `json:"-"`
}

// watchBuffer lets the producer run a little ahead of a slow consumer.
const watchBuffer = 64

// Watch streams the changes of a kind in namespace ns ("" for all namespaces).
// fromRev 0 first sends an ADDED event for every existing object (read at revision R), then
// the changes after R; fromRev N sends the changes after revision N, or fails with
// ErrCompacted when etcd no longer has them. The channel is closed when ctx is done or the
// etcd watch ends (for instance when it is compacted mid-stream); the consumer then
// re-watches from the last revision it saw.
func (s *Store) Watch(ctx context.Context, kind v4.Kind, ns string, fromRev int64) (<-chan Event, error) {
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
	ctx, cancel := context.WithCancel(ctx)
	wch := s.client.Watch(clientv3.WithRequireLeader(ctx), objectPrefix(kind, ns),
		clientv3.WithPrefix(), clientv3.WithRev(fromRev+1), clientv3.WithPrevKV())
	out := make(chan Event, watchBuffer)
	go func() {
		defer close(out)
		defer cancel()
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
		for resp := range wch {
			if err := resp.Err(); err != nil {
				s.log.Debug("watch ended", "kind", kind, "namespace", ns, "err", err)
				return
			}
			for _, ev := range resp.Events {
				e, err := convertEvent(kind, ev)
				if err != nil {
					s.log.Warn("watch: skipping undecodable object", "err", err)
					continue
				}
				if !send(e) {
					return
				}
			}
		}
	}()
	return out, nil
}

func convertEvent(kind v4.Kind, ev *clientv3.Event) (Event, error) {
	switch {
	case ev.Type == clientv3.EventTypeDelete:
		if ev.PrevKv == nil {
			return Event{}, fmt.Errorf("delete of %s without its previous value", ev.Kv.Key)
		}
		obj, err := decodeObject(kind, ev.PrevKv)
		if err != nil {
			return Event{}, err
		}
		obj.GetMeta().ResourceVersion = formatRev(ev.Kv.ModRevision)
		return Event{Type: Deleted, Object: obj, Revision: ev.Kv.ModRevision}, nil
	default:
		obj, err := decodeObject(kind, ev.Kv)
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
