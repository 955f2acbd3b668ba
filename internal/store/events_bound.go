package store

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// boundEvents enforces the limits after a new record was written (resp is createEvent's
// answer, whose third and fourth results count the object's and the namespace's
// records). Trimming is best effort: a failure is logged, the record stays written.
func (s *Store) boundEvents(ctx context.Context, id eventIdentity, resp *clientv3.TxnResponse) {
	lim := s.eventLimits()
	objCount := resp.Responses[2].GetResponseRange().GetCount()
	nsCount := resp.Responses[3].GetResponseRange().GetCount()
	if over := int(objCount) - lim.perObject; over > 0 {
		s.trimIndexed(ctx, eventIndexPrefix+id.ns+"/"+id.obj+"/", over)
	}
	// A namespace trims 1% more than its excess, so that a namespace at its bound does
	// not read its whole index for every new record.
	if over := int(nsCount) - lim.perNamespace; over > 0 {
		s.trimIndexed(ctx, eventIndexPrefix+id.ns+"/", over+lim.perNamespace/100)
	}
	if s.events.created.Add(1)%max(lim.totalEvery, 1) == 0 {
		s.trimTotal(ctx, lim.total)
	}
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
	for _, e := range entries[:min(n, len(entries))] {
		// Only if it was not repeated meanwhile (which moved it to the end).
		_, err := s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.Value(e.key), "=", e.value)).
			Then(clientv3.OpDelete(e.key), clientv3.OpDelete(e.logKey)).Commit()
		if err != nil {
			s.log.Warn("trim events: delete", "key", e.logKey, "err", wrapEtcd(err))
			return
		}
	}
}

// trimTotal deletes the least recently seen records beyond total, and 1% more.
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
	over += total / 100
	s.log.Info("event records over the cluster bound; deleting the oldest", "records", resp.Count, "bound", total, "deleting", over)
	old, err := s.client.Get(ctx, eventLogPrefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(int64(over)))
	if err != nil {
		s.log.Warn("trim events: list oldest", "err", wrapEtcd(err))
		return
	}
	for _, kv := range old.Kvs {
		logKey := string(kv.Key)
		indexKey, err := indexKeyOfLog(logKey)
		if err != nil {
			s.log.Warn("trim events", "err", err)
			continue
		}
		// A record unchanged since the read is still the one its index points to.
		_, err = s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(logKey), "=", kv.ModRevision)).
			Then(clientv3.OpDelete(logKey), clientv3.OpDelete(indexKey)).Commit()
		if err != nil {
			s.log.Warn("trim events: delete", "key", logKey, "err", wrapEtcd(err))
			return
		}
	}
}
