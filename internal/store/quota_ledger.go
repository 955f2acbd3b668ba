package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A namespace's ledger (/berth/v1/nsusage/{ns}) holds its usage. Every write of a counted
// kind puts the new usage in the same transaction, compared on the ledger's mod revision
// (or on its absence): a write that raced with another of the same namespace fails as a
// whole and is tried again with the ledger as it now is. The limit is therefore checked
// against exactly the usage the write replaces, whichever server writes. A namespace
// without a ledger (one that never had a counted write since this layout) is counted from
// what it holds, at one revision, and its first write creates the ledger.

// ledger is a namespace's usage with its ledger key's mod revision (0: none stored yet).
type ledger struct {
	rev   int64
	usage NamespaceUsage
}

// usageDeltas is what one write changes, per namespace; nil when it writes no counted kind.
type usageDeltas map[string]NamespaceUsage

// add records that a write of kind in ns changes it by objects and bytes. A write that
// changes neither (a status of the same length) leaves the ledger alone, and so races
// with no other write of the namespace.
func (d *usageDeltas) add(kind v4.Kind, ns string, objects, bytes int64) {
	if !counted(kind) || objects == 0 && bytes == 0 {
		return
	}
	if *d == nil {
		*d = usageDeltas{}
	}
	u := (*d)[ns]
	u.Objects += objects
	u.Bytes += bytes
	(*d)[ns] = u
}

// opBytes is what ops store: the bytes of their values (sealed, for a secret).
func opBytes(ops ...clientv3.Op) int64 {
	var n int64
	for _, op := range ops {
		n += int64(len(op.ValueBytes()))
	}
	return n
}

// usageWrite is what a write adds to its transaction for the namespaces it changes: the
// comparisons on their ledgers, the puts of their new usage, and that usage, remembered
// once the transaction committed.
type usageWrite struct {
	cmps []clientv3.Cmp
	ops  []clientv3.Op
	next map[string]NamespaceUsage
	// held are the namespaces' lanes the write holds from its plan until its transaction
	// is answered (quota_lanes.go); usageDone and usageFailed give them back, and a write
	// whose transaction got no answer calls release.
	held  []heldLane
	lanes *ledgerLanes
	// fence is the request's quota fence the write compares and moves (quota_fence.go).
	fence *QuotaFence
}

// release gives back the lanes the write holds; it does nothing the second time.
func (w *usageWrite) release() {
	for _, h := range w.held {
		w.lanes.give(h)
	}
	w.held = nil
}

// planUsage prepares the ledger writes of deltas. In a user's request
// (WithNamespaceLimits), a namespace the write grows past one of its limits refuses it
// with ErrQuotaExceeded; a write that shrinks a namespace, or holds it level, always
// passes, so deletes work and an object can be made smaller at the limit.
func (s *Store) planUsage(ctx context.Context, deltas usageDeltas) (*usageWrite, error) {
	w := &usageWrite{}
	if err := s.planFence(ctx, w); err != nil {
		return nil, err
	}
	if len(deltas) == 0 {
		return w, nil
	}
	enforce := limitsEnforced(ctx)
	w.next = make(map[string]NamespaceUsage, len(deltas))
	w.lanes = &s.quota.lanes
	// In the namespaces' order, so that two writes of the same namespaces never wait for
	// each other's lanes.
	for _, ns := range slices.Sorted(maps.Keys(deltas)) {
		h, err := s.quota.lanes.take(ctx, ns, enforce)
		if err != nil {
			w.release()
			return nil, fmt.Errorf("wait for the other writes of namespace %s: %w", ns, err)
		}
		w.held = append(w.held, h)
		d := deltas[ns]
		l, err := s.cachedLedger(ctx, ns)
		if err != nil {
			w.release()
			return nil, err
		}
		if enforce && (d.Objects > 0 || d.Bytes > 0) {
			limits, _, err := s.limitsFor(ctx, ns)
			if err != nil {
				w.release()
				return nil, err
			}
			if err := quotaError(ns, l.usage, d, limits); err != nil {
				w.release()
				return nil, err
			}
		}
		next := NamespaceUsage{Objects: max(l.usage.Objects+d.Objects, 0), Bytes: max(l.usage.Bytes+d.Bytes, 0)}
		val, err := json.Marshal(next)
		if err != nil {
			w.release()
			return nil, fmt.Errorf("encode the usage of namespace %s: %w", ns, err)
		}
		key := usageKey(ns)
		if l.rev == 0 {
			w.cmps = append(w.cmps, clientv3.Compare(clientv3.CreateRevision(key), "=", 0))
		} else {
			w.cmps = append(w.cmps, clientv3.Compare(clientv3.ModRevision(key), "=", l.rev))
		}
		w.ops = append(w.ops, clientv3.OpPut(key, string(val)))
		w.next[ns] = next
	}
	return w, nil
}

// usageDone remembers the ledgers a committed transaction (at rev) wrote, so this
// store's next write of those namespaces reads nothing first.
func (s *Store) usageDone(w *usageWrite, rev int64) {
	w.fenceDone(rev)
	if len(w.next) == 0 {
		return
	}
	s.quota.mu.Lock()
	if s.quota.ledgers == nil || len(s.quota.ledgers)+len(w.next) > quotaCacheSize {
		s.quota.ledgers = make(map[string]ledger, len(w.next))
	}
	for ns, u := range w.next {
		s.quota.ledgers[ns] = ledger{rev: rev, usage: u}
	}
	s.quota.mu.Unlock()
	w.release() // the next write of the namespaces plans on the ledgers remembered above
}

// usageFailed forgets the ledgers of a transaction that failed: another write may have
// changed them, and the next attempt reads them again.
func (s *Store) usageFailed(w *usageWrite) {
	w.fenceFailed()
	if len(w.next) == 0 {
		return
	}
	s.quota.failed.Add(1)
	s.quota.mu.Lock()
	for ns := range w.next {
		delete(s.quota.ledgers, ns)
	}
	s.quota.mu.Unlock()
	w.release()
}

// cachedLedger is the ledger of ns as this store last wrote or read it, else as etcd has
// it. A stale one only costs a failed transaction.
func (s *Store) cachedLedger(ctx context.Context, ns string) (ledger, error) {
	s.quota.mu.Lock()
	l, ok := s.quota.ledgers[ns]
	s.quota.mu.Unlock()
	if ok {
		return l, nil
	}
	return s.readLedger(ctx, ns)
}

// readLedger reads ns's ledger; without one, it counts what ns holds.
func (s *Store) readLedger(ctx context.Context, ns string) (ledger, error) {
	resp, err := s.client.Get(ctx, usageKey(ns))
	if err != nil {
		return ledger{}, fmt.Errorf("read the usage of namespace %s: %w", ns, wrapEtcd(err))
	}
	if len(resp.Kvs) > 0 {
		return decodeLedger(ns, resp.Kvs[0].Value, resp.Kvs[0].ModRevision)
	}
	counted, stored, err := s.scanNamespace(ctx, ns)
	if err != nil {
		return ledger{}, err
	}
	if stored.rev != 0 { // written meanwhile
		return stored, nil
	}
	return ledger{usage: counted}, nil
}

func decodeLedger(ns string, val []byte, rev int64) (ledger, error) {
	l := ledger{rev: rev}
	if err := json.Unmarshal(val, &l.usage); err != nil {
		return ledger{}, fmt.Errorf("decode the usage of namespace %s: %w", ns, err)
	}
	return l, nil
}

// scanNamespace counts what ns holds of the counted kinds, and reads its ledger, as of
// one revision (the ledger's read's). It reads the values, to size them, a chunk at a
// time (eachMaxKeys keys), so a namespace of any size is counted in bounded memory: it runs
// when a namespace has no ledger yet (its first counted write, a read of its quota) and
// when an administrator sets the namespace's limits.
func (s *Store) scanNamespace(ctx context.Context, ns string) (NamespaceUsage, ledger, error) {
	resp, err := s.client.Get(ctx, usageKey(ns))
	if err != nil {
		return NamespaceUsage{}, ledger{}, fmt.Errorf("count namespace %s: %w", ns, wrapEtcd(err))
	}
	var stored ledger
	if len(resp.Kvs) > 0 {
		if stored, err = decodeLedger(ns, resp.Kvs[0].Value, resp.Kvs[0].ModRevision); err != nil {
			return NamespaceUsage{}, ledger{}, err
		}
	}
	rev := resp.Header.Revision
	var u NamespaceUsage
	for _, k := range v4.Kinds() {
		for i, pfx := range []string{objectPrefix(k, ns), rawKey(k, ns, "")} {
			n, size, err := s.sizeRange(ctx, pfx, rev)
			if err != nil {
				return NamespaceUsage{}, ledger{}, fmt.Errorf("count namespace %s: %w", ns, err)
			}
			if i == 0 {
				u.Objects += n
			}
			u.Bytes += size
		}
	}
	cr, err := s.customResourceUsage(ctx, ns, rev)
	if err != nil {
		return NamespaceUsage{}, ledger{}, fmt.Errorf("count namespace %s: %w", ns, err)
	}
	u.Objects += cr.Objects
	u.Bytes += cr.Bytes
	archived, err := s.archiveBytes(ctx, ns, rev)
	u.Bytes += archived
	return u, stored, err
}

// sizeRange counts the keys under pfx at rev and adds up their values' lengths, a chunk
// at a time.
func (s *Store) sizeRange(ctx context.Context, pfx string, rev int64) (n, size int64, err error) {
	end := clientv3.GetPrefixRangeEnd(pfx)
	for from := pfx; ; {
		resp, err := s.client.Get(ctx, from, clientv3.WithRange(end), clientv3.WithRev(rev), clientv3.WithLimit(eachMaxKeys))
		if err != nil {
			return 0, 0, wrapEtcd(err)
		}
		for _, kv := range resp.Kvs {
			n++
			size += int64(len(kv.Value))
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return n, size, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// recount replaces ns's ledger with a count of what it holds: it repairs a ledger that
// drifted (objects written by a server of an earlier version, sealed values rewrapped
// under a key of another name's length).
func (s *Store) recount(ctx context.Context, ns string) error {
	for attempt := 0; ; attempt++ {
		u, stored, err := s.scanNamespace(ctx, ns)
		if err != nil {
			return err
		}
		w := &usageWrite{next: map[string]NamespaceUsage{ns: u}}
		cmp := clientv3.Compare(clientv3.ModRevision(usageKey(ns)), "=", stored.rev)
		if stored.rev == 0 {
			cmp = clientv3.Compare(clientv3.CreateRevision(usageKey(ns)), "=", 0)
		}
		val, err := json.Marshal(u)
		if err != nil {
			return fmt.Errorf("encode the usage of namespace %s: %w", ns, err)
		}
		resp, err := s.client.Txn(ctx).If(cmp).Then(clientv3.OpPut(usageKey(ns), string(val))).Commit()
		if err != nil {
			return fmt.Errorf("count namespace %s: %w", ns, wrapEtcd(err))
		}
		if resp.Succeeded {
			s.usageDone(w, resp.Header.Revision)
			return nil
		}
		s.usageFailed(w)
		if err := usageWait(ctx, attempt); err != nil {
			return fmt.Errorf("count namespace %s: %w", ns, err)
		}
	}
}

// usageRetries bounds the attempts of one write that keeps losing its namespace's ledger
// to other writes of that namespace. Writes of one namespace take turns on its ledger,
// so many clients writing one namespace at once each wait a little, as apply's retries
// do (apply.go), and never fail while the request lasts.
const usageRetries = 100

// usageWait waits before attempt+1 of a write whose ledger changed under it: a random
// wait up to a cap that doubles from 2 ms to 250 ms ("full jitter").
func usageWait(ctx context.Context, attempt int) error {
	if attempt+1 >= usageRetries {
		return fmt.Errorf("%w (gave up after %d concurrent writes of the namespace)", ErrConflict, attempt+1)
	}
	t := time.NewTimer(jitter(min(applyBackoffMin<<min(attempt, 7), applyBackoffMax)))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("%w (%d concurrent writes of the namespace, then %w)", ErrConflict, attempt+1, ctx.Err())
	case <-t.C:
		return nil
	}
}

// storedSize is what an object's two keys hold: its stored value and its definition.
type storedSize struct{ object, raw int64 }

// getSized is get, with the stored sizes of the object and of its definition, which the
// ledger of a counted kind needs (read in one transaction); for other kinds it is get.
func (s *Store) getSized(ctx context.Context, kind v4.Kind, ns, name string) (v4.Object, int64, storedSize, error) {
	if !counted(kind) {
		obj, rev, err := s.get(ctx, kind, ns, name)
		return obj, rev, storedSize{}, err
	}
	if err := checkKey(kind, ns, name); err != nil {
		return nil, 0, storedSize{}, err
	}
	if name == "" {
		return nil, 0, storedSize{}, fmt.Errorf("%w: name is empty", ErrInvalid)
	}
	resp, err := s.client.Txn(ctx).Then(clientv3.OpGet(objectKey(kind, ns, name)), clientv3.OpGet(rawKey(kind, ns, name))).Commit()
	if err != nil {
		return nil, 0, storedSize{}, wrapEtcd(err)
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return nil, 0, storedSize{}, ErrNotFound
	}
	obj, err := s.decodeObject(kind, kvs[0])
	if err != nil {
		return nil, 0, storedSize{}, err
	}
	size := storedSize{object: int64(len(kvs[0].Value))}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		size.raw += int64(len(kv.Value))
	}
	return obj, kvs[0].ModRevision, size, nil
}

// writeRetries bounds the attempts of an update or a delete of kind: a counted kind's
// write also races with every write of its namespace (its ledger), and is retried as
// long as the object itself did not change.
func writeRetries(kind v4.Kind) int {
	if counted(kind) {
		return usageRetries
	}
	return maxRetries
}

// getWanted is getSized for a write whose precondition is the version want (0: none),
// ErrConflict when the stored one differs.
func (s *Store) getWanted(ctx context.Context, kind v4.Kind, ns, name string, want int64) (v4.Object, int64, storedSize, error) {
	cur, curRev, size, err := s.getSized(ctx, kind, ns, name)
	if err == nil && want != 0 && want != curRev {
		err = fmt.Errorf("%w (given %d, stored %d)", ErrConflict, want, curRev)
	}
	return cur, curRev, size, err
}

// lostWrite follows an update or a delete whose transaction failed: ErrConflict when a
// version was given and no ledger was compared (the object changed), else, when the
// ledger was compared, a wait before the next attempt, whose read tells a changed object
// (a conflict when a version was given) from a changed ledger.
func (s *Store) lostWrite(ctx context.Context, u *usageWrite, want int64, attempt int) error {
	s.usageFailed(u)
	if want != 0 && len(u.cmps) == 0 {
		return ErrConflict
	}
	if len(u.cmps) > 0 {
		return usageWait(ctx, attempt)
	}
	return nil
}
