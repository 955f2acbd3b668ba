package store

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// boundEvents enforces the limits after a new record was written (objCount is the count
// of the object's records that createEvent's transaction read). Trimming is best effort:
// a failure is logged, the record stays written.
func (s *Store) boundEvents(ctx context.Context, id eventIdentity, objCount int64) {
	s.boundObject(ctx, id, objCount)
	s.boundScopes(ctx, []string{id.ns})
}

// boundObject trims the object's records to its bound, given their count.
func (s *Store) boundObject(ctx context.Context, id eventIdentity, objCount int64) {
	if over := int(objCount) - s.eventLimits().perObject; over > 0 {
		s.trimIndexed(ctx, eventIndexPrefix+id.ns+"/"+id.obj+"/", over)
	}
}

// boundScopes counts new records (one namespace entry each) against their namespaces'
// bounds and the cluster's, in memory, and counts and trims a scope in etcd only when
// that is due (events_count.go). A count is not part of the write: it would run in
// etcd's apply loop, which every write waits for.
func (s *Store) boundScopes(ctx context.Context, namespaces []string) {
	lim := s.eventLimits()
	s.events.mu.Lock()
	due := s.events.counts.created(namespaces, lim)
	s.events.mu.Unlock()
	for _, d := range due.ns {
		s.boundNamespace(ctx, d, lim.perNamespace)
	}
	if due.total {
		s.trimTotal(ctx, lim.total)
	}
}

// boundNamespace counts a namespace's records and trims them to its bound, and a tenth of
// the bound more, so that a namespace at its bound reads its whole index once per
// thousand new records, not every hundred.
func (s *Store) boundNamespace(ctx context.Context, d dueNamespace, bound int) {
	defer s.checkDone(d.sc)
	prefix := eventIndexPrefix + d.name + "/"
	count, err := s.client.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		s.scopeCounted(d.sc, 0, false)
		s.log.Warn("bound events: count the namespace's records", "namespace", d.name, "err", wrapEtcd(err))
		return
	}
	s.scopeCounted(d.sc, int(count.Count), true)
	if over := int(count.Count) - bound; over > 0 {
		s.trimIndexed(ctx, prefix, over+bound/trimSlack)
	}
}

// scopeCounted records a count of a scope under check.
func (s *Store) scopeCounted(sc *scopeCount, n int, ok bool) {
	s.events.mu.Lock()
	defer s.events.mu.Unlock()
	sc.counted(n, ok)
}

// checkDone ends a scope's check: the next is due by its count again.
func (s *Store) checkDone(sc *scopeCount) {
	s.events.mu.Lock()
	defer s.events.mu.Unlock()
	sc.counting = false
}

// trimIndexed deletes the n least recently seen records under an index prefix.
func (s *Store) trimIndexed(ctx context.Context, indexPrefix string, n int) {
	resp, err := s.client.Get(ctx, indexPrefix, clientv3.WithPrefix())
	if err != nil {
		s.log.Warn("trim events: list index", "prefix", indexPrefix, "err", wrapEtcd(err))
		return
	}
	type entry struct{ key, value, logKey string }
	entries := make([]entry, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var idx eventIndex
		if err := json.Unmarshal(kv.Value, &idx); err != nil {
			s.log.Warn("trim events: undecodable index", "key", string(kv.Key), "err", err)
			continue
		}
		entries = append(entries, entry{string(kv.Key), string(kv.Value), idx.Key})
	}
	// Log keys start with the time last seen, zero-padded: their order is that time's.
	slices.SortFunc(entries, func(a, b entry) int { return cmp.Compare(a.logKey, b.logKey) })
	var dels []recordDelete
	for _, e := range entries[:min(n, len(entries))] {
		// Only if it was not repeated meanwhile (which moved it to the end).
		dels = append(dels, recordDelete{clientv3.Compare(clientv3.Value(e.key), "=", e.value), e.key, e.logKey})
	}
	s.deleteRecords(ctx, dels)
}

// trimSlack: a trim deletes a trimSlack-th of the bound beyond the excess.
const trimSlack = 10

// recordDelete deletes a record and its index key if cond still holds.
type recordDelete struct {
	cond             clientv3.Cmp
	indexKey, logKey string
}

// How many records one trim transaction deletes (three operations each).
const (
	deleteBatch         = 500
	deleteBatchExternal = 40
)

// deleteRecords deletes records in few transactions: each deletes its records if every
// one's condition holds, else they are deleted one by one (a record repeated meanwhile
// stays).
func (s *Store) deleteRecords(ctx context.Context, dels []recordDelete) {
	batch := deleteBatch
	if s.etcd == nil {
		batch = deleteBatchExternal
	}
	for start := 0; start < len(dels); start += batch {
		part := dels[start:min(start+batch, len(dels))]
		cmps := make([]clientv3.Cmp, 0, len(part))
		ops := make([]clientv3.Op, 0, 2*len(part))
		for _, d := range part {
			cmps = append(cmps, d.cond)
			ops = append(ops, clientv3.OpDelete(d.indexKey), clientv3.OpDelete(d.logKey))
		}
		resp, err := s.client.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err != nil {
			s.log.Warn("trim events: delete", "records", len(part), "err", wrapEtcd(err))
			return
		}
		if resp.Succeeded {
			s.recordsDeleted(part)
			continue
		}
		for i, d := range part {
			resp, err := s.client.Txn(ctx).If(d.cond).Then(clientv3.OpDelete(d.indexKey), clientv3.OpDelete(d.logKey)).Commit()
			if err != nil {
				s.log.Warn("trim events: delete", "key", d.logKey, "err", wrapEtcd(err))
				return
			}
			if resp.Succeeded {
				s.recordsDeleted(part[i : i+1])
			}
		}
	}
}

// recordsDeleted takes deleted records off the counts of their namespaces and the total.
func (s *Store) recordsDeleted(dels []recordDelete) {
	s.events.mu.Lock()
	defer s.events.mu.Unlock()
	for _, d := range dels {
		s.events.counts.deleted(namespaceOfIndex(d.indexKey), 1)
	}
}

// trimTotal counts the cluster's records and deletes the least recently seen beyond
// total, and a tenth of total more.
func (s *Store) trimTotal(ctx context.Context, total int) {
	sc := &s.events.counts.total
	defer s.checkDone(sc)
	resp, err := s.client.Get(ctx, eventLogPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		s.scopeCounted(sc, 0, false)
		s.log.Warn("trim events: count", "err", wrapEtcd(err))
		return
	}
	s.scopeCounted(sc, int(resp.Count), true)
	over := int(resp.Count) - total
	if over <= 0 {
		return
	}
	over += total / trimSlack
	s.log.Info("event records over the cluster bound; deleting the oldest", "records", resp.Count, "bound", total, "deleting", over)
	old, err := s.client.Get(ctx, eventLogPrefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(int64(over)))
	if err != nil {
		s.log.Warn("trim events: list oldest", "err", wrapEtcd(err))
		return
	}
	var dels []recordDelete
	for _, kv := range old.Kvs {
		logKey := string(kv.Key)
		indexKey, err := indexKeyOfLog(logKey)
		if err != nil {
			s.log.Warn("trim events", "err", err)
			continue
		}
		// A record unchanged since the read is still the one its index points to.
		dels = append(dels, recordDelete{clientv3.Compare(clientv3.ModRevision(logKey), "=", kv.ModRevision), indexKey, logKey})
	}
	s.deleteRecords(ctx, dels)
}
