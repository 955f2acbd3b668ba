package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Paging of event lists (docs/api.md, "Events").
const (
	DefaultEventLimit = 500
	MaxEventLimit     = 5000
	// maxEventScan bounds the records one page reads to filter them: a page of a rare
	// kind or name may hold fewer than its limit, even none, and still go on.
	maxEventScan = 10_000
	// eventFetchBatch is how many records one read transaction fetches by key; it stays
	// under an external etcd's default of 128 operations per transaction.
	eventFetchBatch = 100
)

// EventPage is one page of records, oldest (least recently seen) first, or newest first
// when asked (ListEventsPageOrder).
type EventPage struct {
	Items []v4.Event
	// Continue is empty on the last page; otherwise it asks for the next one.
	Continue string
	// Revision is the etcd revision every page of the list reads, so pages neither skip
	// nor repeat a record that changes meanwhile.
	Revision int64
}

// eventCursor is what a continue token carries: the revision of the list and the log key
// of the last record the previous page looked at.
type eventCursor struct {
	Rev   int64  `json:"rev"`
	After string `json:"after"`
	// Newest says the list goes newest first: After is then the key the next page
	// reads before. A token of one order is refused by the other.
	Newest bool `json:"newest,omitempty"`
}

func (c eventCursor) token() string {
	b, _ := json.Marshal(c) // two plain fields: cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

func parseEventCursor(token string) (eventCursor, error) {
	var c eventCursor
	if token == "" {
		return c, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err == nil && (c.Rev <= 0 || len(c.After) <= len(eventLogPrefix) || c.After[:len(eventLogPrefix)] != eventLogPrefix) {
		err = errors.New("unknown content")
	}
	if err != nil {
		return c, fmt.Errorf("%w: continue: not a token of this list: %v", ErrInvalid, err)
	}
	return c, nil
}

// ListEventsPage returns up to limit records matching f (0 means DefaultEventLimit), in
// the order they were last seen, starting after the page cont continues (empty for the
// first page). A token whose revision etcd compacted is ErrCompacted: list again.
func (s *Store) ListEventsPage(ctx context.Context, f v4.EventFilter, limit int, cont string) (EventPage, error) {
	return s.ListEventsPageOrder(ctx, f, limit, cont, false)
}

// ListEventsPageOrder is ListEventsPage, newest (most recently seen) first when newest is
// set: a console shows the last events without reading every page before them.
func (s *Store) ListEventsPageOrder(ctx context.Context, f v4.EventFilter, limit int, cont string, newest bool) (EventPage, error) {
	if limit == 0 {
		limit = DefaultEventLimit
	}
	if limit < 0 || limit > MaxEventLimit {
		return EventPage{}, fmt.Errorf("list events: %w: limit %d is outside 1..%d", ErrInvalid, limit, MaxEventLimit)
	}
	cur, err := parseEventCursor(cont)
	if err != nil {
		return EventPage{}, fmt.Errorf("list events: %w", err)
	}
	if cont != "" && cur.Newest != newest {
		return EventPage{}, fmt.Errorf("list events: %w: continue: a token of the list in the other order", ErrInvalid)
	}
	cur.Newest = newest
	var page EventPage
	if f.Namespace != "" {
		page, err = s.eventPageIndexed(ctx, f, limit, cur)
	} else {
		page, err = s.eventPageScan(ctx, f, limit, cur)
	}
	if errors.Is(err, rpctypes.ErrFutureRev) {
		err = fmt.Errorf("%w: continue: revision %d is in the future", ErrInvalid, cur.Rev)
	}
	if err != nil {
		return EventPage{}, fmt.Errorf("list events: %w", wrapEtcd(err))
	}
	return page, nil
}

// ListEvents returns every record matching f, following the pages; the records are
// bounded (docs/operations.md, "Events"), so is the answer.
func (s *Store) ListEvents(ctx context.Context, f v4.EventFilter) ([]v4.Event, error) {
	var out []v4.Event
	cont := ""
	for {
		page, err := s.ListEventsPage(ctx, f, MaxEventLimit, cont)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if page.Continue == "" {
			return out, nil
		}
		cont = page.Continue
	}
}

// eventPageScan pages through the log itself: every namespace, in key order.
func (s *Store) eventPageScan(ctx context.Context, f v4.EventFilter, limit int, cur eventCursor) (EventPage, error) {
	// Oldest first reads [start, end) upwards from after the cursor; newest first reads
	// it downwards, end moving down to the last key read (an exclusive end).
	start := eventLogPrefix
	end := clientv3.GetPrefixRangeEnd(eventLogPrefix)
	switch {
	case cur.After != "" && cur.Newest:
		end = cur.After
	case cur.After != "":
		start = cur.After + "\x00"
	}
	chunk := limit
	if f.Kind != "" || f.Name != "" { // most records will be filtered out: read more at once
		chunk = min(max(limit, 1000), MaxEventLimit)
	}
	page := EventPage{Revision: cur.Rev}
	scanned := 0
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(int64(chunk))}
		if cur.Newest {
			opts = append(opts, clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))
		}
		if page.Revision != 0 {
			opts = append(opts, clientv3.WithRev(page.Revision))
		}
		resp, err := s.client.Get(ctx, start, opts...)
		if err != nil {
			return EventPage{}, err
		}
		if page.Revision == 0 {
			page.Revision = resp.Header.Revision
		}
		for i, kv := range resp.Kvs {
			scanned++
			if r, ok := s.decodeRecord(kv); ok && f.Match(r) {
				page.Items = append(page.Items, r)
			}
			if len(page.Items) == limit || scanned >= maxEventScan {
				if i < len(resp.Kvs)-1 || resp.More {
					page.Continue = eventCursor{Rev: page.Revision, After: string(kv.Key), Newest: cur.Newest}.token()
				}
				return page, nil
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return page, nil
		}
		if last := string(resp.Kvs[len(resp.Kvs)-1].Key); cur.Newest {
			end = last
		} else {
			start = last + "\x00"
		}
	}
}

// eventPageIndexed pages through one namespace (or one object in it): its index lists
// where its records are, which are then read by key, so other namespaces cost nothing.
func (s *Store) eventPageIndexed(ctx context.Context, f v4.EventFilter, limit int, cur eventCursor) (EventPage, error) {
	opts := []clientv3.OpOption{clientv3.WithPrefix()}
	if cur.Rev != 0 {
		opts = append(opts, clientv3.WithRev(cur.Rev))
	}
	resp, err := s.client.Get(ctx, eventIndexRange(f.Namespace, f.Kind, f.Name), opts...)
	if err != nil {
		return EventPage{}, err
	}
	page := EventPage{Revision: resp.Header.Revision}
	if cur.Rev != 0 {
		page.Revision = cur.Rev
	}
	keys := make([]string, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var idx eventIndex
		if err := json.Unmarshal(kv.Value, &idx); err != nil {
			s.log.Warn("skipping undecodable event index", "key", string(kv.Key), "err", err)
			continue
		}
		if cur.After == "" || !cur.Newest && idx.Key > cur.After || cur.Newest && idx.Key < cur.After {
			keys = append(keys, idx.Key)
		}
	}
	slices.Sort(keys)
	if cur.Newest {
		slices.Reverse(keys)
	}
	for start := 0; start < len(keys); start += eventFetchBatch {
		batch := keys[start:min(start+eventFetchBatch, len(keys))]
		ops := make([]clientv3.Op, len(batch))
		for i, k := range batch {
			ops[i] = clientv3.OpGet(k, clientv3.WithRev(page.Revision))
		}
		tr, err := s.client.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return EventPage{}, err
		}
		for i, r := range tr.Responses {
			for _, kv := range r.GetResponseRange().GetKvs() {
				if rec, ok := s.decodeRecord(kv); ok && f.Match(rec) {
					page.Items = append(page.Items, rec)
				}
			}
			if len(page.Items) == limit {
				if start+i < len(keys)-1 {
					page.Continue = eventCursor{Rev: page.Revision, After: batch[i], Newest: cur.Newest}.token()
				}
				return page, nil
			}
		}
	}
	return page, nil
}

func (s *Store) decodeRecord(kv *mvccpb.KeyValue) (v4.Event, bool) {
	var r v4.Event
	if err := json.Unmarshal(kv.Value, &r); err != nil {
		s.log.Warn("skipping undecodable event", "key", string(kv.Key), "err", err)
		return r, false
	}
	return r, true
}
