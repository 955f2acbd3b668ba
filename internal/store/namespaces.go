package store

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Namespaces returns the namespaces that hold objects users wrote, sorted: those whose
// usage ledger (quota_ledger.go) counts at least one object. Namespaces are not objects
// of their own in berth; a namespace exists while something is in it. One range over
// the ledgers, one key per namespace.
func (s *Store) Namespaces(ctx context.Context) ([]string, error) {
	pfx := usageKey("")
	resp, err := s.client.Get(ctx, pfx, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, fmt.Errorf("list the namespaces: %w", wrapEtcd(err))
	}
	out := make([]string, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		ns := strings.TrimPrefix(string(kv.Key), pfx)
		l, err := decodeLedger(ns, kv.Value, kv.ModRevision)
		if err != nil {
			return nil, fmt.Errorf("list the namespaces: %w", err)
		}
		if l.usage.Objects > 0 {
			out = append(out, ns)
		}
	}
	return out, nil
}
