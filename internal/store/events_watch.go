package store

import (
	"context"
	"fmt"

	v4 "github.com/berthhq/berth/api/v4"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// WatchEvents streams records matching f that are written from now on: new ones and every
// merge of a repeat (a put of the record at its new place in the log). The deletes that
// moves and bounds cause are not sent. The channel is closed when ctx is done or the etcd
// watch ends.
func (s *Store) WatchEvents(ctx context.Context, f v4.EventFilter) (<-chan v4.Event, error) {
	// Start from the current revision so nothing recorded after the call is missed.
	resp, err := s.client.Get(ctx, eventLogPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return nil, fmt.Errorf("watch events: %w", wrapEtcd(err))
	}
	ctx, cancel := context.WithCancel(ctx)
	wch := s.client.Watch(clientv3.WithRequireLeader(ctx), eventLogPrefix,
		clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1), clientv3.WithFilterDelete())
	out := make(chan v4.Event, watchBuffer)
	go func() {
		defer close(out)
		defer cancel()
		for wr := range wch {
			if err := wr.Err(); err != nil {
				s.log.Debug("event watch ended", "err", err)
				return
			}
			for _, ev := range wr.Events {
				r, ok := s.decodeRecord(ev.Kv)
				if !ok || !f.Match(r) {
					continue
				}
				select {
				case out <- r:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}
