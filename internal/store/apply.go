package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/tracing"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// readChunk keeps each read transaction under etcd's default limit of 128 operations.
const readChunk = 100

// Apply creates or updates every document in one etcd transaction: either all writes land
// or none do. Documents whose content equals the stored object (v4.SameContent) are left
// alone and reported "unchanged". The transaction compares every key's mod revision with
// the one read just before; if a concurrent writer got in between, the whole apply is
// recomputed after a jittered backoff (retryApply). Results are in input order. A document
// that carries a metadata.resourceVersion makes it a precondition, as for Update: when it
// differs from the stored mod revision (or the object does not exist) the whole apply
// fails with ErrConflict and nothing is written. Documents without one are
// last-writer-wins, so losing a race to another writer is not an error (docs/store.md).
func (s *Store) Apply(ctx context.Context, docs []v4.Document) ([]v4.ApplyResult, error) {
	if len(docs) == 0 {
		return []v4.ApplyResult{}, nil
	}
	seen := make(map[string]int, len(docs))
	for i, d := range docs {
		if err := checkObject(d.Object); err != nil {
			return nil, fmt.Errorf("apply document %d: %w", i, err)
		}
		m := d.Object.GetMeta()
		key := objectKey(d.Object.GetKind(), m.Namespace, m.Name)
		if j, dup := seen[key]; dup {
			return nil, fmt.Errorf("apply: %w: documents %d and %d are both %s %s/%s",
				ErrInvalid, j, i, d.Object.GetKind(), m.Namespace, m.Name)
		}
		seen[key] = i
	}
	ctx, span := tracer.Start(ctx, "store.Apply", trace.WithAttributes(attribute.Int("berth.documents", len(docs))))
	defer span.End()
	results, err := s.retryApply(ctx, docs)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	return results, err
}

// Apply's retry of a lost race. Last-writer-wins means every apply must land eventually,
// even when many clients apply the same object at once (docs/api.md), so a lost race is
// retried for as long as the request lasts, up to applyRetryFor, rather than a fixed
// number of times. The wait before each retry is drawn at random up to a cap that doubles
// from applyBackoffMin to applyBackoffMax ("full jitter"), so the losers of one round do
// not all come back together and collide again.
const (
	applyRetryFor   = 10 * time.Second
	applyBackoffMin = 2 * time.Millisecond
	applyBackoffMax = 250 * time.Millisecond
)

func (s *Store) retryApply(ctx context.Context, docs []v4.Document) ([]v4.ApplyResult, error) {
	start := time.Now()
	deadline := start.Add(applyRetryFor)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	backoff := applyBackoffMin
	for attempt := 1; ; attempt++ {
		results, ok, err := s.tryApply(ctx, docs)
		if err != nil {
			return nil, fmt.Errorf("apply: %w", err)
		}
		if ok {
			return results, nil
		}
		wait := jitter(backoff)
		if time.Now().Add(wait).After(deadline) {
			return nil, fmt.Errorf("apply: %w (gave up after %d concurrent writes in %s)",
				ErrConflict, attempt, time.Since(start).Round(time.Millisecond))
		}
		s.log.Debug("apply raced with a concurrent write, retrying", "attempt", attempt, "wait", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("apply: %w (%d concurrent writes, then %w)", ErrConflict, attempt, ctx.Err())
		case <-t.C:
		}
		backoff = min(2*backoff, applyBackoffMax)
	}
}

// jitter draws a wait in [1ns, limit]: "full jitter" backoff.
func jitter(limit time.Duration) time.Duration {
	return 1 + rand.N(limit)
}

type applyCurrent struct {
	obj  v4.Object  // nil when absent
	rev  int64      // mod revision, 0 when absent
	size storedSize // of a counted kind (its namespace's ledger)
}

// applyPlan is one attempt's transaction: a comparison per document, the writes of those
// that change, and what they add to their namespaces' ledgers.
type applyPlan struct {
	results []v4.ApplyResult
	cmps    []clientv3.Cmp
	ops     []clientv3.Op
	deltas  usageDeltas
}

// tryApply makes one attempt; ok is false when the transaction's comparisons failed.
func (s *Store) tryApply(ctx context.Context, docs []v4.Document) ([]v4.ApplyResult, bool, error) {
	current, err := s.readCurrent(ctx, docs)
	if err != nil {
		return nil, false, err
	}
	if err := refuseControlled(ctx, current); err != nil {
		return nil, false, err
	}
	now := time.Now().UTC().Truncate(time.Second)
	p := &applyPlan{results: make([]v4.ApplyResult, len(docs)), cmps: make([]clientv3.Cmp, 0, len(docs))}
	for i, d := range docs {
		if err := s.planDocument(ctx, p, i, d, current[i], now); err != nil {
			return nil, false, err
		}
	}
	if len(p.ops) == 0 {
		return p.results, true, nil
	}
	// The namespaces' ledgers go in the same transaction: a race on one of them is a lost
	// race like any other, and retryApply recomputes everything.
	u, err := s.planUsage(ctx, p.deltas)
	if err != nil {
		return nil, false, err
	}
	resp, err := s.client.Txn(ctx).If(append(p.cmps, u.cmps...)...).Then(append(p.ops, u.ops...)...).Commit()
	if err != nil {
		s.usageFailed(u) // no answer: it may have committed, so the ledger is read again
		return nil, false, wrapEtcd(err)
	}
	if !resp.Succeeded {
		s.usageFailed(u)
		return nil, false, nil
	}
	s.usageDone(u, resp.Header.Revision)
	stampApplied(docs, p.results, current, now, formatRev(resp.Header.Revision))
	return p.results, true, nil
}

// planDocument adds document i to the plan: its comparison always, its writes unless it
// is unchanged.
func (s *Store) planDocument(ctx context.Context, p *applyPlan, i int, d v4.Document, cur applyCurrent, now time.Time) error {
	obj, meta := d.Object, d.Object.GetMeta()
	kind := obj.GetKind()
	key := objectKey(kind, meta.Namespace, meta.Name)
	if want, err := parseRev(meta.ResourceVersion); err != nil {
		return fmt.Errorf("%s %s/%s: %w", kind, meta.Namespace, meta.Name, err)
	} else if want != 0 && want != cur.rev {
		return fmt.Errorf("%s %s/%s: %w (given %d, stored %d)",
			kind, meta.Namespace, meta.Name, ErrConflict, want, cur.rev)
	}
	p.cmps = append(p.cmps, clientv3.Compare(clientv3.ModRevision(key), "=", cur.rev))
	res := v4.ApplyResult{Kind: kind, Namespace: meta.Namespace, Name: meta.Name}
	created := now
	if cur.obj != nil {
		// Before the comparison: a document that leaves stoppedInstances out keeps them
		// and is unchanged if nothing else differs.
		v4.CarryStopped(obj, cur.obj)
	}
	switch {
	case cur.obj == nil:
		res.Action = v4.ActionCreated
	case v4.SameContent(cur.obj, obj):
		res.Action = v4.ActionUnchanged
		res.ResourceVersion = formatRev(cur.rev)
		p.results[i] = res
		return nil
	default:
		res.Action = v4.ActionUpdated
		created = cur.obj.GetMeta().CreationTimestamp
		v4.CarryStatus(obj, cur.obj)
	}
	// The change carries this trace to whoever acts on it (the controllers).
	tracing.Stamp(ctx, meta, now)
	val, err := encodeObject(obj, created)
	if err != nil {
		return fmt.Errorf("%s %s/%s: %w", kind, meta.Namespace, meta.Name, err)
	}
	raw := Raw{ContentType: ContentTypeOf(d.Raw), Data: d.Raw}
	if len(d.Raw) == 0 {
		raw = Raw{ContentType: ContentTypeJSON, Data: val}
	}
	put := []clientv3.Op{s.putObject(kind, meta.Namespace, meta.Name, val), s.putRaw(kind, meta.Namespace, meta.Name, raw)}
	if cur.obj == nil {
		p.deltas.add(kind, meta.Namespace, 1, opBytes(put...))
	} else {
		p.deltas.add(kind, meta.Namespace, 0, opBytes(put...)-cur.size.object-cur.size.raw)
	}
	p.ops = append(p.ops, put...)
	p.results[i] = res
	return nil
}

// stampApplied gives the documents their stored resource versions and creation times.
// Every write of one transaction carries the transaction's revision rev.
func stampApplied(docs []v4.Document, results []v4.ApplyResult, current []applyCurrent, now time.Time, rev string) {
	for i, d := range docs {
		meta := d.Object.GetMeta()
		if results[i].Action == v4.ActionUnchanged {
			meta.ResourceVersion = results[i].ResourceVersion
			meta.CreationTimestamp = current[i].obj.GetMeta().CreationTimestamp
			continue
		}
		results[i].ResourceVersion = rev
		meta.ResourceVersion = rev
		if current[i].obj != nil {
			meta.CreationTimestamp = current[i].obj.GetMeta().CreationTimestamp
		} else {
			meta.CreationTimestamp = now
		}
	}
}

// readCurrent reads the stored state of every document's key, in read transactions of at
// most readChunk operations (the comparisons of the write catch anything that moved in
// between). A counted kind's definition is read too, for its size.
func (s *Store) readCurrent(ctx context.Context, docs []v4.Document) ([]applyCurrent, error) {
	out := make([]applyCurrent, len(docs))
	for start := 0; start < len(docs); {
		var ops []clientv3.Op
		var at []int // the document of each operation
		end := start
		for ; end < len(docs) && len(ops)+2 <= readChunk; end++ {
			kind, m := docs[end].Object.GetKind(), docs[end].Object.GetMeta()
			ops = append(ops, clientv3.OpGet(objectKey(kind, m.Namespace, m.Name)))
			at = append(at, end)
			if counted(kind) {
				ops = append(ops, clientv3.OpGet(rawKey(kind, m.Namespace, m.Name)))
				at = append(at, end)
			}
		}
		resp, err := s.client.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return nil, wrapEtcd(err)
		}
		for j, r := range resp.Responses {
			kvs := r.GetResponseRange().Kvs
			if len(kvs) == 0 {
				continue
			}
			i := at[j]
			if strings.HasPrefix(string(kvs[0].Key), prefix+"raw/") {
				out[i].size.raw = int64(len(kvs[0].Value))
				continue
			}
			obj, err := s.decodeObject(docs[i].Object.GetKind(), kvs[0])
			if err != nil {
				return nil, err
			}
			out[i].obj, out[i].rev, out[i].size.object = obj, kvs[0].ModRevision, int64(len(kvs[0].Value))
		}
		start = end
	}
	return out, nil
}

// ContentTypeOf tells a JSON document (first non-blank byte '{' or '[') from YAML.
func ContentTypeOf(b []byte) string {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{', '[':
			return ContentTypeJSON
		default:
			return ContentTypeYAML
		}
	}
	return ContentTypeJSON
}
