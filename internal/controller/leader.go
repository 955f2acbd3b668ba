package controller

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/berthhq/berth/internal/store"
)

// LeaderID returns the id of the server that runs the controllers now: the value of the
// oldest key under the election prefix, as concurrency.Election.Leader reads it. It is
// "" when no server leads (between terms). A server killed while leading stays listed
// until its session's lease expires; that is exactly how long nobody runs the
// controllers.
func LeaderID(ctx context.Context, st *store.Store) (string, error) {
	resp, err := st.Client().Get(ctx, electionPrefix+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return "", fmt.Errorf("read the controllers' leader: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return "", nil
	}
	return string(resp.Kvs[0].Value), nil
}
