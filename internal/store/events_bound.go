package store

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// boundEvents enforces the limits after a new record was written (resp is createEvent's
// answer, whose third result counts the object's records). Trimming is best effort: a
// failure is logged, the record stays written.
//
// The namespace's records are counted apart from the write, and only once every 1% of
// its bound of new records here: a count inside the transaction ran in etcd's apply loop,
// which every write waits for, and cost as many steps as the namespace has records (five
// thousand nodes registering stalled etcd counting the cluster's node events). A
// namespace may so exceed its bound by 1% (and by what other servers add) until the next
// count.
func (s *Store) boundEvents(ctx context.Context, id eventIdentity, objCount int64) {
	s.boundObject(ctx, id, objCount)
	s.boundScopes(ctx, id)
}

// boundObject trims the object's records to its bound, given their count.
func (s *Store) boundObject(ctx context.Context, id eventIdentity, objCount int64) {
	if over := int(objCount) - s.eventLimits().perObject; over > 0 {
		s.trimIndexed(ctx, eventIndexPrefix+id.ns+"/"+id.obj+"/", over)
	}
}

// boundScopes counts a new record against its namespace's bound and the cluster's, and
// trims them when due.
func (s *Store) boundScopes(ctx context.Context, id eventIdentity) {
	lim := s.eventLimits()
	if s.namespaceCountDue(id.ns, max(lim.perNamespace/100, 1)) {
		prefix := eventIndexPrefix + id.ns + "/"
		count, err := s.client.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			s.log.Warn("bound events: count the namespace's records", "namespace", id.ns, "err", wrapEtcd(err))
		} else if over := int(count.Count) - lim.perNamespace; over > 0 {
			// A tenth of the bound more than the excess, so that a namespace at its bound
			// reads its whole index once per thousand new records, not every hundred.
			s.trimIndexed(ctx, prefix, over+lim.perNamespace/trimSlack)
		}
	}
	if s.events.created.Add(1)%max(lim.totalEvery, 1) == 0 {
		s.trimTotal(ctx, lim.total)
	}
}

// maxNamespaceCounters bounds eventState.nsCreated; when full it starts over (the
// namespaces are then counted at their next record).
const maxNamespaceCounters = 10_000

// namespaceCountDue counts a new record of namespace ns and reports whether its records
// should be counted now: every few new records, and at its first here.
func (s *Store) namespaceCountDue(ns string, every int) bool {
	s.events.mu.Lock()
	defer s.events.mu.Unlock()
	if s.events.nsCreated == nil || len(s.events.nsCreated) >= maxNamespaceCounters {
		s.events.nsCreated = map[string]int{}
	}
	n, seen := s.events.nsCreated[ns]
	if seen && n+1 < every {
		s.events.nsCreated[ns] = n + 1
		return false
	}
	s.events.nsCreated[ns] = 0
	return true
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
			continue
		}
		for _, d := range part {
			if _, err := s.client.Txn(ctx).If(d.cond).Then(clientv3.OpDelete(d.indexKey), clientv3.OpDelete(d.logKey)).Commit(); err != nil {
				s.log.Warn("trim events: delete", "key", d.logKey, "err", wrapEtcd(err))
				return
			}
		}
	}
}

// trimTotal deletes the least recently seen records beyond total, and a tenth of total
// more.
func (s *Store) trimTotal(ctx context.Context, total int) {
	resp, err := s.client.Get(ctx, eventLogPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		s.log.Warn("trim events: count", "err", wrapEtcd(err))
		return
	}
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
