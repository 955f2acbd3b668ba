package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
	"unicode/utf8"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/ctxtime"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Records live Config.EventTTL (DefaultEventTTL, one hour) after they were last seen.
// One lease is shared by the records of a minute, so recording does not cost a lease
// grant each time; a record thus lives between the TTL and the TTL and a minute after its
// last repeat.
const (
	DefaultEventTTL  = time.Hour
	leaseShareWindow = time.Minute
)

// maxEventMessage bounds a message (bytes): a longer one is cut, on a rune boundary, and
// ends with "...". Repeats are merged on the cut message.
const maxEventMessage = 1024

// eventLimits bound the records kept (docs/operations.md, "Events"). Tests lower them.
type eventLimits struct {
	perObject    int // distinct records of one object; the least recently seen go first
	perNamespace int // records of one namespace
	total        int // records of the whole cluster
	// totalSlack is how many records past total are let be before the cluster's are
	// counted and trimmed (a namespace's slack is 1% of its bound).
	totalSlack int
}

var defaultEventLimits = eventLimits{perObject: 100, perNamespace: 10_000, total: 50_000, totalSlack: 100}

// eventState is the store's event bookkeeping: the shared lease, the limits, a cache
// of the index values this store last wrote and the records it knows of per scope.
type eventState struct {
	mu      sync.Mutex
	ttl     time.Duration // how long a record lives after it was last seen
	lease   clientv3.LeaseID
	granted time.Time
	index   map[string]string // index key -> its value as last written or read here
	limits  eventLimits
	counts  scopeCounts // records per namespace and in all, for their bounds (events_count.go)
}

// maxIndexCache bounds eventState.index; when full it starts over (a miss costs one more
// round trip, never a wrong count: every write compares the stored value).
const maxIndexCache = 4096

// eventIndex is the value of an index key: where the record is, and what a repeat needs
// to update it without reading it.
type eventIndex struct {
	Key   string    `json:"key"`
	Count int       `json:"count"`
	First time.Time `json:"firstTime"`
	Last  time.Time `json:"lastTime"`
}

func (s *Store) recordLease(ctx context.Context, fresh bool) (clientv3.LeaseID, error) {
	l := &s.events
	l.mu.Lock()
	defer l.mu.Unlock()
	if !fresh && l.lease != 0 && time.Since(l.granted) < leaseShareWindow {
		return l.lease, nil
	}
	resp, err := s.client.Grant(ctx, int64((l.ttl + leaseShareWindow).Seconds()))
	if err != nil {
		return 0, wrapEtcd(err)
	}
	l.lease, l.granted = resp.ID, time.Now()
	return l.lease, nil
}

func (s *Store) cachedIndex(key string) (string, bool) {
	s.events.mu.Lock()
	defer s.events.mu.Unlock()
	v, ok := s.events.index[key]
	return v, ok
}

func (s *Store) cacheIndex(key, value string) {
	s.events.mu.Lock()
	defer s.events.mu.Unlock()
	if s.events.index == nil || len(s.events.index) >= maxIndexCache {
		s.events.index = make(map[string]string)
	}
	s.events.index[key] = value
}

func (s *Store) eventLimits() eventLimits {
	s.events.mu.Lock()
	defer s.events.mu.Unlock()
	if s.events.limits == (eventLimits{}) {
		return defaultEventLimits
	}
	return s.events.limits
}

// normalizeEvent fills the defaults of a record to be written: a zero Time means now, an
// empty Type means Normal; the message is cut to maxEventMessage.
func normalizeEvent(r v4.Event) (v4.Event, error) {
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	r.Time = r.Time.UTC()
	if r.Type == "" {
		r.Type = v4.EventNormal
	}
	if r.Namespace != "" {
		if err := checkName("namespace", r.Namespace); err != nil {
			return r, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	r.Message = truncateMessage(r.Message)
	r.Count, r.FirstTime, r.LastTime = 0, time.Time{}, time.Time{}
	return r, nil
}

func truncateMessage(m string) string {
	if len(m) <= maxEventMessage {
		return m
	}
	const ellipsis = "..."
	cut := maxEventMessage - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(m[cut]) {
		cut--
	}
	return m[:cut] + ellipsis
}

// maxRecordAttempts bounds the compare-and-swap retries of one record when several
// writers (servers) merge the same event at once. Every lost race is another writer's
// success, so they all progress; this only keeps one from looping forever.
const maxRecordAttempts = 100

// RecordEvent stores a record, or merges it into the record of the same event (same
// object, type, reason, message, task group and node): its count goes up, its first time
// stays, its time becomes this one. A repeat this store recorded before costs one etcd
// transaction; watchers see every merge (docs/store.md, "Event records").
func (s *Store) RecordEvent(ctx context.Context, r v4.Event) error {
	r, err := normalizeEvent(r)
	if err != nil {
		return fmt.Errorf("record event: %w", err)
	}
	id := identityOf(r)
	return s.recordEvent(ctx, pendingEvent{r: r, id: id, key: id.indexKey(), n: 1, first: r.Time})
}

// recordEvent creates p's record, or merges its occurrences into it.
func (s *Store) recordEvent(ctx context.Context, p pendingEvent) error {
	key := p.key
	current, known := s.cachedIndex(key) // a guess: every write below compares it
	freshLease, lostMerge := false, false
	for attempt := range maxRecordAttempts {
		if attempt >= 2 && lostMerge {
			// Writers of one event keep racing: spread them out, then read afresh (the
			// value read before sleeping would be stale by then).
			pause := time.Duration(rand.Int64N(int64(min(attempt, 10)) * int64(time.Millisecond)))
			if err := ctxtime.Sleep(ctx, pause); err != nil {
				return fmt.Errorf("record event %s: %w", key, err)
			}
			known, lostMerge = false, false // createEvent reads the index when it exists
		}
		lease, err := s.recordLease(ctx, freshLease)
		if err != nil {
			return fmt.Errorf("record event: %w", err)
		}
		var resp *clientv3.TxnResponse
		if known {
			resp, err = s.mergeEvent(ctx, p, current, lease)
		} else {
			resp, err = s.createEvent(ctx, p, lease)
		}
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			freshLease = true // the shared lease expired or was revoked
			continue
		}
		if err != nil {
			return fmt.Errorf("record event %s: %w", key, wrapEtcd(err))
		}
		if resp.Succeeded {
			if !known {
				s.boundEvents(ctx, p.id, resp.Responses[2].GetResponseRange().GetCount())
			}
			return nil
		}
		// Lost a race, or the cache was stale: start from what is stored.
		lostMerge = known
		kvs := resp.Responses[0].GetResponseRange().Kvs
		known = len(kvs) > 0
		if known {
			current = string(kvs[0].Value)
		}
	}
	return fmt.Errorf("record event %s: too many concurrent writers", key)
}

// createEvent writes a new record and its index, unless the index exists (then the
// transaction fails and reads it). It also counts the object's records, for their bound
// (a few keys; the namespace's are counted outside the transaction, events_bound.go).
func (s *Store) createEvent(ctx context.Context, p pendingEvent, lease clientv3.LeaseID) (*clientv3.TxnResponse, error) {
	r, id := p.r, p.id
	r.Count, r.FirstTime, r.LastTime = p.n, p.first, r.Time
	idx := eventIndex{Key: id.logKey(r.Time.UnixNano()), Count: p.n, First: p.first, Last: r.Time}
	rec, idxVal, err := marshalEvent(r, idx)
	if err != nil {
		return nil, err
	}
	key := p.key
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, idxVal, clientv3.WithLease(lease)),
			clientv3.OpPut(idx.Key, rec, clientv3.WithLease(lease)),
			clientv3.OpGet(eventIndexPrefix+id.ns+"/"+id.obj+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())).
		Else(clientv3.OpGet(key)).Commit()
	if err == nil && resp.Succeeded {
		s.cacheIndex(key, idxVal)
	}
	return resp, err
}

// mergeEvent moves the record to p's time with p's occurrences added, if the index still
// holds current; otherwise the transaction fails and reads the index.
func (s *Store) mergeEvent(ctx context.Context, p pendingEvent, current string, lease clientv3.LeaseID) (*clientv3.TxnResponse, error) {
	r, id := p.r, p.id
	var prev eventIndex
	if err := json.Unmarshal([]byte(current), &prev); err != nil || prev.Key == "" {
		return nil, fmt.Errorf("decode event index %s: %q: %v", id.indexKey(), current, err)
	}
	last := r.Time
	if last.Before(prev.Last) { // a late report of an older repeat: the record keeps its place
		last = prev.Last
	}
	r.Time, r.Count, r.FirstTime, r.LastTime = last, prev.Count+p.n, prev.First, last
	idx := eventIndex{Key: id.logKey(last.UnixNano()), Count: r.Count, First: prev.First, Last: last}
	rec, idxVal, err := marshalEvent(r, idx)
	if err != nil {
		return nil, err
	}
	key := p.key
	ops := []clientv3.Op{clientv3.OpPut(key, idxVal, clientv3.WithLease(lease))}
	if prev.Key != idx.Key { // etcd refuses two operations on one key in a transaction
		ops = append(ops, clientv3.OpDelete(prev.Key))
	}
	ops = append(ops, clientv3.OpPut(idx.Key, rec, clientv3.WithLease(lease)))
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(key), "=", current)).
		Then(ops...).
		Else(clientv3.OpGet(key)).Commit()
	if err == nil && resp.Succeeded {
		s.cacheIndex(key, idxVal)
	}
	return resp, err
}

func marshalEvent(r v4.Event, idx eventIndex) (rec, idxVal string, err error) {
	b, err := json.Marshal(r)
	if err != nil {
		return "", "", fmt.Errorf("encode event: %w", err)
	}
	ib, err := json.Marshal(idx)
	if err != nil {
		return "", "", fmt.Errorf("encode event index: %w", err)
	}
	return string(b), string(ib), nil
}
