package store

import (
	"context"
	"fmt"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Namespaces returns the namespaces that hold objects users wrote, or whose limits an
// administrator set (a quota given to a team before it wrote anything), sorted: those
// whose usage ledger (quota_ledger.go) counts at least one object, and those with a
// limits key. Namespaces are not objects of their own in berth; a namespace exists while
// something is in it or bounds it. One transaction: a range over the ledgers and one
// over the limits' keys, one key per namespace each.
func (s *Store) Namespaces(ctx context.Context) ([]string, error) {
	pfx, limits := usageKey(""), limitsKey("")
	resp, err := s.client.Txn(ctx).Then(
		clientv3.OpGet(pfx, clientv3.WithPrefix()),
		clientv3.OpGet(limits, clientv3.WithPrefix(), clientv3.WithKeysOnly())).Commit()
	if err != nil {
		return nil, fmt.Errorf("list the namespaces: %w", wrapEtcd(err))
	}
	var out []string
	for _, kv := range resp.Responses[0].GetResponseRange().GetKvs() {
		ns := strings.TrimPrefix(string(kv.Key), pfx)
		l, err := decodeLedger(ns, kv.Value, kv.ModRevision)
		if err != nil {
			return nil, fmt.Errorf("list the namespaces: %w", err)
		}
		if l.usage.Objects > 0 {
			out = append(out, ns)
		}
	}
	for _, kv := range resp.Responses[1].GetResponseRange().GetKvs() {
		out = append(out, strings.TrimPrefix(string(kv.Key), limits))
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if out == nil {
		out = []string{}
	}
	return out, nil
}
