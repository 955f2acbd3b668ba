package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	v4 "github.com/berthhq/berth/api/v4"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A namespace's quota fence (/berth/v1/nsfence/{ns}) orders the users' writes of a
// namespace that has a resource quota, across servers (docs/policy.md, "Exactness"). The
// server's admission reads the fence with the namespace's objects (NamespaceObjectsFenced:
// the objects at a revision no older than the fence's read), judges the write against
// them, and the write's transaction compares the fence's mod revision with the one the
// admission saw and puts the fence again. Two writes judged against the same usage, on
// two servers, cannot then both commit: the second fails with ErrQuotaFence, and its
// admission counts again and judges again. Only the users' writes of a namespace with a
// resource quota carry a fence; every other write leaves it alone.

func fenceKey(ns string) string { return prefix + "nsfence/" + ns }

// ErrQuotaFence is a write whose namespace's quota fence moved since its admission read
// the usage: another server wrote the namespace in between, so the quota must be judged
// again. It is a conflict (409) when the caller gives up.
var ErrQuotaFence = fmt.Errorf("%w: the namespace's usage changed while its quota was checked", ErrConflict)

// QuotaFence is what a request's admission saw of its namespaces' fences: per namespace
// the fence's mod revision (0: none stored yet). The request's own writes move it along
// as they commit, so its later writes compare against them. Its zero value fences
// nothing; it is safe for one request's sequential and concurrent writes.
type QuotaFence struct {
	mu   sync.Mutex
	revs map[string]int64
	// check is set by a failed transaction: the fences are read before the next attempt,
	// and moved names the namespace whose fence another write moved.
	check bool
	moved string
}

// See records rev as the fence of ns the admission counted against.
func (f *QuotaFence) See(ns string, rev int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.revs == nil {
		f.revs = map[string]int64{}
	}
	f.revs[ns] = rev
	f.check, f.moved = false, ""
}

// Reset forgets every fence f saw, for an admission that counts again.
func (f *QuotaFence) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revs, f.check, f.moved = nil, false, ""
}

// Empty reports whether f fences no namespace.
func (f *QuotaFence) Empty() bool {
	if f == nil {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.revs) == 0
}

type fenceCtxKey struct{}

// WithQuotaFence makes the writes of ctx compare and move f's fences (a nil or empty f:
// ctx as it is).
func WithQuotaFence(ctx context.Context, f *QuotaFence) context.Context {
	if f.Empty() {
		return ctx
	}
	return context.WithValue(ctx, fenceCtxKey{}, f)
}

func fenceOf(ctx context.Context) *QuotaFence {
	f, _ := ctx.Value(fenceCtxKey{}).(*QuotaFence)
	return f
}

// planFence adds to w the comparisons and puts of ctx's fences. After a failed attempt it
// reads the fences first: ErrQuotaFence when one moved (another write of the namespace
// went first, and the admission must judge again), else the attempt goes on, as a write
// that lost only its ledger or its object does.
func (s *Store) planFence(ctx context.Context, w *usageWrite) error {
	f := fenceOf(ctx)
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.check && f.moved == "" {
		for ns, rev := range f.revs {
			resp, err := s.client.Get(ctx, fenceKey(ns), clientv3.WithKeysOnly())
			if err != nil {
				return fmt.Errorf("read the quota fence of namespace %s: %w", ns, wrapEtcd(err))
			}
			if fenceRev(resp.Kvs) != rev {
				f.moved = ns
				break
			}
		}
		f.check = false
	}
	if f.moved != "" {
		return fmt.Errorf("namespace %s: %w", f.moved, ErrQuotaFence)
	}
	for _, ns := range slices.Sorted(maps.Keys(f.revs)) {
		w.cmps = append(w.cmps, clientv3.Compare(clientv3.ModRevision(fenceKey(ns)), "=", f.revs[ns]))
		w.ops = append(w.ops, clientv3.OpPut(fenceKey(ns), ""))
	}
	w.fence = f
	return nil
}

// fenceDone moves the fences to the revision of the write's committed transaction.
func (w *usageWrite) fenceDone(rev int64) {
	if w.fence == nil {
		return
	}
	w.fence.mu.Lock()
	defer w.fence.mu.Unlock()
	for ns := range w.fence.revs {
		w.fence.revs[ns] = rev
	}
}

// fenceFailed marks the fences to be read before the next attempt.
func (w *usageWrite) fenceFailed() {
	if w.fence == nil {
		return
	}
	w.fence.mu.Lock()
	w.fence.check = true
	w.fence.mu.Unlock()
}

func fenceRev(kvs []*mvccpb.KeyValue) int64 {
	if len(kvs) == 0 {
		return 0
	}
	return kvs[0].ModRevision
}

// NamespaceObjectsFenced is NamespaceObjects with ns's quota fence, read in the same
// transaction: the objects hold every write fenced before the revision returned.
func (s *Store) NamespaceObjectsFenced(ctx context.Context, ns string) ([]v4.Object, int64, error) {
	if err := checkName("namespace", ns); err != nil {
		return nil, 0, fmt.Errorf("namespace objects: %w: %w", ErrInvalid, err)
	}
	return s.namespaceObjects(ctx, ns, true)
}
