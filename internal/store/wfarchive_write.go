package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Writes of the workflow archive (wfarchive.go). Every write of a chunk compares the
// chunk's mod revision (or, for a namespace's last chunk, that no chunk follows it), so
// writers on several servers never lose one another's entries.

// ArchiveWorkflows moves finished workflows of namespace ns into the archive: each
// entry's workflow is the stored object (its resourceVersion the one read, compared in
// the transaction that deletes it) with all its nodes in status.nodes. The result has one
// error per entry: nil when archived, ErrConflict or ErrNotFound when the object changed
// or went meanwhile, ErrTooLarge when its record alone is past what a value may hold.
// Its offloaded nodes are the caller's to delete once it is archived.
func (s *Store) ArchiveWorkflows(ctx context.Context, ns string, entries []*v4.ArchivedWorkflow) ([]error, error) {
	errs := make([]error, len(entries))
	todo := make([]int, 0, len(entries))
	for i, e := range entries {
		m := e.Workflow.Metadata
		if m.Namespace != ns {
			errs[i] = fmt.Errorf("%w: workflow %s/%s is not of namespace %s", ErrInvalid, m.Namespace, m.Name, ns)
			continue
		}
		if err := checkArchiveKey(ns, m.Name, e.Workflow.Status.UID); err != nil {
			errs[i] = err
			continue
		}
		todo = append(todo, i)
	}
	slices.SortFunc(todo, func(a, b int) int { return strings.Compare(entries[a].SortKey(), entries[b].SortKey()) })
	for len(todo) > 0 {
		n, err := s.archiveBatch(ctx, ns, entries, todo, errs)
		if err != nil {
			return nil, fmt.Errorf("archive workflows of %s: %w", ns, err)
		}
		todo = todo[n:]
	}
	return errs, nil
}

// archiveBatch archives the first of todo that go to one chunk (at most wfArchiveBatch),
// setting their errors, and returns how many it took.
func (s *Store) archiveBatch(ctx context.Context, ns string, entries []*v4.ArchivedWorkflow, todo []int, errs []error) (int, error) {
	for attempt := range usageRetries {
		kv, past, err := s.chunkAt(ctx, ns, entries[todo[0]].SortKey(), false)
		if err != nil {
			return 0, err
		}
		n := 0
		for n < len(todo) && n < wfArchiveBatch && (kv == nil || past || entries[todo[n]].SortKey() <= sortKeyOf(ns, string(kv.Key))) {
			n++
		}
		done, err := s.archiveInto(ctx, ns, kv, past, entries, todo[:n], errs)
		if err != nil {
			return 0, err
		}
		if done {
			return n, nil
		}
		if err := usageWait(ctx, attempt); err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("%w (gave up after %d concurrent writes)", ErrConflict, usageRetries)
}

// archiveInto writes the workflows of batch into the chunk kv (nil: the namespace has
// none; past: it is the last and they sort after it) in one transaction, and reports
// whether it committed (false: something changed, read again).
func (s *Store) archiveInto(ctx context.Context, ns string, kv *mvccpb.KeyValue, past bool, entries []*v4.ArchivedWorkflow, batch []int, errs []error) (bool, error) {
	var old []*v4.ArchivedWorkflow
	if kv != nil {
		var err error
		if old, err = decodeChunk(string(kv.Key), kv.Value); err != nil {
			return false, err
		}
	}
	var deltas usageDeltas
	var cmps []clientv3.Cmp
	var ops []clientv3.Op
	var moving []int
	for _, i := range batch {
		wf := entries[i].Workflow
		if err := fitsAlone(entries[i]); err != nil {
			errs[i] = err
			continue
		}
		want, err := parseRev(wf.Metadata.ResourceVersion)
		if err != nil {
			errs[i] = err
			continue
		}
		_, rev, size, err := s.getWanted(ctx, v4.KindWorkflow, ns, wf.Metadata.Name, want)
		if err != nil {
			if !errors.Is(err, ErrConflict) && !errors.Is(err, ErrNotFound) {
				return false, err
			}
			errs[i] = err
			continue
		}
		key := objectKey(v4.KindWorkflow, ns, wf.Metadata.Name)
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", rev))
		ops = append(ops, clientv3.OpDelete(key), clientv3.OpDelete(rawKey(v4.KindWorkflow, ns, wf.Metadata.Name)))
		deltas.add(v4.KindWorkflow, ns, -1, -size.object-size.raw)
		moving = append(moving, i)
	}
	if len(moving) == 0 {
		return true, nil
	}
	chunks, err := chunksWith(ns, old, entries, moving)
	if err != nil {
		return false, err
	}
	oldBytes := 0
	if kv != nil {
		oldBytes = len(kv.Value)
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision))
		if !slices.ContainsFunc(chunks, func(c encodedChunk) bool { return c.key == string(kv.Key) }) {
			ops = append(ops, clientv3.OpDelete(string(kv.Key)))
		}
	}
	if kv == nil || past {
		// No chunk may have been made after the one read (or at all).
		from := wfArchivePrefix(ns)
		if kv != nil {
			from = string(kv.Key) + "\x00"
		}
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(from), "=", 0).WithRange(clientv3.GetPrefixRangeEnd(wfArchivePrefix(ns))))
	}
	newBytes := 0
	for _, c := range chunks {
		ops = append(ops, clientv3.OpPut(c.key, string(c.val)))
		newBytes += len(c.val)
	}
	deltas.add(v4.KindWorkflow, ns, 0, int64(newBytes-oldBytes))
	return s.commitArchive(ctx, cmps, ops, deltas)
}

// chunksWith encodes the chunk old with the entries of moving added (an entry of the same
// sort key replaced), split as the bounds say.
func chunksWith(ns string, old []*v4.ArchivedWorkflow, entries []*v4.ArchivedWorkflow, moving []int) ([]encodedChunk, error) {
	byKey := make(map[string]*v4.ArchivedWorkflow, len(old)+len(moving))
	for _, e := range old {
		byKey[e.SortKey()] = e
	}
	for _, i := range moving {
		byKey[entries[i].SortKey()] = entries[i]
	}
	all := make([]*v4.ArchivedWorkflow, 0, len(byKey))
	for _, e := range byKey {
		all = append(all, e)
	}
	slices.SortFunc(all, func(a, b *v4.ArchivedWorkflow) int { return strings.Compare(a.SortKey(), b.SortKey()) })
	chunks, tooLarge, err := splitChunks(ns, all)
	if err != nil {
		return nil, err
	}
	if len(tooLarge) > 0 { // fitsAlone let each new one in, and the old ones were stored
		return nil, fmt.Errorf("%w: archived workflow %s alone is past %d bytes compressed", ErrTooLarge, tooLarge[0].SortKey(), wfArchiveMaxValue)
	}
	return chunks, nil
}

// fitsAlone refuses with ErrTooLarge an entry whose chunk alone would be past
// wfArchiveMaxValue. Only an entry whose JSON is near that size is compressed to tell.
func fitsAlone(e *v4.ArchivedWorkflow) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode archived workflow %s: %w", e.SortKey(), err)
	}
	if len(b) <= wfArchiveMaxValue-4096 {
		return nil
	}
	val, err := encodeChunk([]*v4.ArchivedWorkflow{e})
	if err != nil {
		return err
	}
	if len(val) > wfArchiveMaxValue {
		return fmt.Errorf("%w: workflow %s is %d bytes compressed, more than the archive's %d", ErrTooLarge, e.SortKey(), len(val), wfArchiveMaxValue)
	}
	return nil
}

// commitArchive commits a write of the archive with its namespace's usage, and reports
// whether it committed.
func (s *Store) commitArchive(ctx context.Context, cmps []clientv3.Cmp, ops []clientv3.Op, deltas usageDeltas) (bool, error) {
	u, err := s.planUsage(ctx, deltas)
	if err != nil {
		return false, err
	}
	resp, err := s.client.Txn(ctx).If(append(cmps, u.cmps...)...).Then(append(ops, u.ops...)...).Commit()
	if err != nil {
		s.usageFailed(u)
		return false, wrapEtcd(err)
	}
	if !resp.Succeeded {
		s.usageFailed(u)
		return false, nil
	}
	s.usageDone(u, resp.Header.Revision)
	return true, nil
}

// DeleteArchived removes the archived workflow ns/name of status.uid uid; ErrNotFound
// when it is not in the archive. Its artifacts are then collected as those of a
// workflow that is gone.
func (s *Store) DeleteArchived(ctx context.Context, ns, name, uid string) error {
	if err := checkArchiveKey(ns, name, uid); err != nil {
		return fmt.Errorf("delete archived workflow %s/%s: %w", ns, name, err)
	}
	sortKey := name + "/" + uid
	for attempt := range usageRetries {
		kv, past, err := s.chunkAt(ctx, ns, sortKey, false)
		if err != nil {
			return err
		}
		if kv == nil || past {
			return fmt.Errorf("archived workflow %s/%s (uid %s): %w", ns, name, uid, ErrNotFound)
		}
		done, err := s.rewriteChunk(ctx, ns, kv, func(e *v4.ArchivedWorkflow) bool { return e.SortKey() != sortKey })
		if errors.Is(err, ErrNotFound) {
			return fmt.Errorf("archived workflow %s/%s (uid %s): %w", ns, name, uid, ErrNotFound)
		}
		if err != nil || done {
			return err
		}
		if err := usageWait(ctx, attempt); err != nil {
			return err
		}
	}
	return fmt.Errorf("delete archived workflow %s/%s: %w", ns, name, ErrConflict)
}

// rewriteChunk writes chunk kv of ns with only the entries keep keeps (deleting it when
// none is left), and reports whether it committed; ErrNotFound when keep keeps them all.
func (s *Store) rewriteChunk(ctx context.Context, ns string, kv *mvccpb.KeyValue, keep func(*v4.ArchivedWorkflow) bool) (bool, error) {
	old, err := decodeChunk(string(kv.Key), kv.Value)
	if err != nil {
		return false, err
	}
	kept := slices.DeleteFunc(slices.Clone(old), func(e *v4.ArchivedWorkflow) bool { return !keep(e) })
	if len(kept) == len(old) {
		return false, ErrNotFound
	}
	chunks, _, err := splitChunks(ns, kept) // fewer entries than fitted: no entry is too large
	if err != nil {
		return false, err
	}
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision)}
	var ops []clientv3.Op
	newBytes := 0
	for _, c := range chunks {
		ops = append(ops, clientv3.OpPut(c.key, string(c.val)))
		newBytes += len(c.val)
	}
	if !slices.ContainsFunc(chunks, func(c encodedChunk) bool { return c.key == string(kv.Key) }) {
		ops = append(ops, clientv3.OpDelete(string(kv.Key)))
	}
	var deltas usageDeltas
	deltas.add(v4.KindWorkflow, ns, 0, int64(newBytes-len(kv.Value)))
	return s.commitArchive(ctx, cmps, ops, deltas)
}

// ExpireArchived drops the archived workflows of every namespace whose ExpiresAt is
// past at now, reading only the headers of chunks where nothing expired, and returns how
// many it dropped.
func (s *Store) ExpireArchived(ctx context.Context, now time.Time) (int, error) {
	pfx := prefix + "wfarchive/"
	end := clientv3.GetPrefixRangeEnd(pfx)
	dropped := 0
	for from := pfx; ; {
		resp, err := s.client.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(wfArchivePage))
		if err != nil {
			return dropped, fmt.Errorf("expire archived workflows: %w", wrapEtcd(err))
		}
		for _, kv := range resp.Kvs {
			n, err := s.expireChunk(ctx, kv, now)
			if err != nil {
				return dropped, fmt.Errorf("expire archived workflows: %w", err)
			}
			dropped += n
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return dropped, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// expireChunk drops the expired entries of one chunk; a chunk changed meanwhile is left
// to the next sweep.
func (s *Store) expireChunk(ctx context.Context, kv *mvccpb.KeyValue, now time.Time) (int, error) {
	h, _, err := decodeChunkHeader(kv.Value)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", kv.Key, err)
	}
	if h.Expires.IsZero() || h.Expires.After(now) {
		return 0, nil
	}
	ns, _, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), prefix+"wfarchive/"), "/")
	if !ok {
		return 0, nil
	}
	n := 0
	done, err := s.rewriteChunk(ctx, ns, kv, func(e *v4.ArchivedWorkflow) bool {
		if !e.ExpiresAt.IsZero() && !e.ExpiresAt.After(now) {
			n++
			return false
		}
		return true
	})
	if err != nil && !errors.Is(err, ErrNotFound) || !done {
		return 0, err
	}
	return n, nil
}
