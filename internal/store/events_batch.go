package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/ctxtime"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// How many new records one RecordEvents transaction writes (three operations each: the
// index, the record, the object's count): small enough that one transaction does not
// hold etcd's apply loop for long, and within an external cluster's default of 128
// operations.
const (
	eventBatch         = 250
	eventBatchExternal = 40
)

// RecordEvents records each event as RecordEvent does, the new records together, in few
// transactions (one raft entry and one fsync for a burst's "instance N is Running"
// records instead of one each). The occurrences of one event in evs count as one write
// (its count goes up by how many there were). A repeat of a record this store knows is
// merged on its own, as RecordEvent does. Bad events are skipped and named in the error;
// the others are still recorded.
func (s *Store) RecordEvents(ctx context.Context, evs []v4.Event) error {
	var (
		errs   []error
		fresh  []pendingEvent
		alone  []pendingEvent
		groups []pendingEvent
		at     = make(map[string]int, len(evs)) // index key -> its place in groups
	)
	for _, e := range evs {
		r, err := normalizeEvent(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("record event %s %s/%s: %w", e.Reason, e.Namespace, e.Name, err))
			continue
		}
		id := identityOf(r)
		key := id.indexKey()
		if i, ok := at[key]; ok {
			groups[i].add(r)
			continue
		}
		at[key] = len(groups)
		groups = append(groups, pendingEvent{r: r, id: id, key: key, n: 1, first: r.Time})
	}
	for _, g := range groups {
		if _, known := s.cachedIndex(g.key); known {
			alone = append(alone, g)
		} else {
			fresh = append(fresh, g)
		}
	}
	batch := eventBatch
	if s.etcd == nil {
		batch = eventBatchExternal
	}
	for start := 0; start < len(fresh); start += batch {
		left, err := s.createEvents(ctx, fresh[start:min(start+batch, len(fresh))])
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		alone = append(alone, left...)
	}
	for _, p := range alone {
		if err := s.recordEvent(ctx, p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// pendingEvent is an event waiting to be written: its last occurrence r, how many there
// were, and when the first was.
type pendingEvent struct {
	r     v4.Event
	id    eventIdentity
	key   string // id.indexKey(), made once
	n     int
	first time.Time
}

// add counts one more occurrence of the event.
func (p *pendingEvent) add(r v4.Event) {
	p.n++
	if r.Time.Before(p.first) {
		p.first = r.Time
	}
	if r.Time.After(p.r.Time) {
		p.r.Time = r.Time
	}
}

// createEvents writes new records in one transaction, if none of their indexes exists
// (another server recorded one meanwhile); otherwise it writes nothing and returns them
// all, for recordEvent to merge or create one by one.
func (s *Store) createEvents(ctx context.Context, evs []pendingEvent) (left []pendingEvent, err error) {
	cmps := make([]clientv3.Cmp, 0, len(evs))
	ops := make([]clientv3.Op, 0, 3*len(evs))
	idxVals := make([]string, len(evs))
	for fresh := false; ; fresh = true {
		lease, err := s.recordLease(ctx, fresh)
		if err != nil {
			return nil, fmt.Errorf("record %d events: %w", len(evs), err)
		}
		cmps, ops = cmps[:0], ops[:0]
		for i, p := range evs {
			r := p.r
			r.Count, r.FirstTime, r.LastTime = p.n, p.first, r.Time
			idx := eventIndex{Key: p.id.logKey(r.Time.UnixNano()), Count: p.n, First: p.first, Last: r.Time}
			rec, idxVal, err := marshalEvent(r, idx)
			if err != nil {
				return nil, err
			}
			key := p.key
			idxVals[i] = idxVal
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(key), "=", 0))
			ops = append(ops, clientv3.OpPut(key, idxVal, clientv3.WithLease(lease)),
				clientv3.OpPut(idx.Key, rec, clientv3.WithLease(lease)),
				clientv3.OpGet(eventIndexPrefix+p.id.ns+"/"+p.id.obj+"/", clientv3.WithPrefix(), clientv3.WithCountOnly()))
		}
		resp, err := s.client.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if errors.Is(err, rpctypes.ErrLeaseNotFound) && !fresh {
			continue // the shared lease expired or was revoked
		}
		if err != nil {
			return nil, fmt.Errorf("record %d events: %w", len(evs), wrapEtcd(err))
		}
		if !resp.Succeeded {
			return evs, nil
		}
		// An object's records are trimmed once, to its count after the last of them (the
		// counts are read in order within the transaction).
		objCounts := map[eventIdentity]int64{}
		namespaces := make([]string, len(evs))
		for i, p := range evs {
			s.cacheIndex(p.key, idxVals[i])
			obj := eventIdentity{ns: p.id.ns, obj: p.id.obj}
			objCounts[obj] = max(objCounts[obj], resp.Responses[3*i+2].GetResponseRange().GetCount())
			namespaces[i] = p.id.ns
		}
		for obj, n := range objCounts {
			s.boundObject(ctx, obj, n)
		}
		s.boundScopes(ctx, namespaces)
		return nil, nil
	}
}

// eventQueueSize bounds the records waiting for the event writer (QueueEvent): a few MB.
const eventQueueSize = 10_000

// QueueEvent hands a record to the store's event writer, which records it a moment later
// with the others waiting, in few transactions (RecordEvents): a controller or a status
// write never waits for its event. Its time is now unless set. When more than
// eventQueueSize records wait, it is dropped: events are a view, and a flood of them must
// not hold up the writes they describe or grow the server's memory (the drops are logged
// and counted, DroppedEvents). Similar Normal events beyond a few are combined into one
// record (events_aggregate.go).
func (s *Store) QueueEvent(r v4.Event) {
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	r = s.similar.combine(r)
	s.eventsQueued.Add(1) // before it can be written: FlushEvents counts it
	select {
	case s.eventQueue <- r:
	default:
		s.eventsDone.Add(1)
		if n := s.droppedEvents.Add(1); n == 1 || n%1000 == 0 {
			s.log.Warn("events are recorded more slowly than they come: dropping some", "dropped", n, "reason", r.Reason)
		}
	}
}

// DroppedEvents is how many queued records QueueEvent has dropped.
func (s *Store) DroppedEvents() uint64 { return s.droppedEvents.Load() }

// FlushEvents waits until the records queued before it are written (or failed, or were
// dropped), or ctx ends.
func (s *Store) FlushEvents(ctx context.Context) error {
	target := s.eventsQueued.Load()
	for s.eventsDone.Load() < target {
		if err := ctxtime.Sleep(ctx, 5*time.Millisecond); err != nil {
			return fmt.Errorf("flush events: %w", err)
		}
	}
	return nil
}

// writeQueuedEvents records the queued events until ctx ends, every record waiting at a
// moment in one RecordEvents call; at the end it records what is still queued (for at
// most a few seconds).
func (s *Store) writeQueuedEvents(ctx context.Context) {
	batch := make([]v4.Event, 0, eventBatch)
	write := func(wctx context.Context) {
		if err := s.RecordEvents(wctx, batch); err != nil {
			s.log.Warn("record queued events", "events", len(batch), "err", truncateMessage(err.Error()))
		}
		s.eventsDone.Add(uint64(len(batch)))
		clear(batch)
		batch = batch[:0]
	}
	take := func() {
		for len(batch) < eventBatch {
			select {
			case r := <-s.eventQueue:
				batch = append(batch, r)
			default:
				return
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
			defer cancel()
			for take(); len(batch) > 0 && fctx.Err() == nil; take() {
				write(fctx)
			}
			return
		case r := <-s.eventQueue:
			batch = append(batch, r)
		}
		take()
		// Not canceled with ctx: a batch taken is written even while the store closes.
		start := time.Now()
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		write(wctx)
		cancel()
		// Events are a view: they take at most about half of etcd's time, so a burst's
		// records never starve the writes they describe, or the nodes' lease renewals
		// (which wait for etcd to apply what it committed). What cannot wait is dropped.
		ctxtime.Sleep(ctx, min(time.Since(start), time.Second))
	}
}
