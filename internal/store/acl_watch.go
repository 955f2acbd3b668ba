package store

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// aclPrefix holds every token and policy (and the bootstrap mark).
const aclPrefix = prefix + "acl/"

// WatchACL sends the etcd revision of each change to a token or a policy, from now on,
// until ctx ends or etcd's watch ends (a lost leader, a compaction); then the channel is
// closed and the caller, which may have missed changes, watches again. Changes that come
// faster than the consumer takes them are merged: it gets the latest revision, never a
// backlog, because all it learns is "something changed, ask again".
func (s *Store) WatchACL(ctx context.Context) <-chan int64 {
	out := make(chan int64, 1)
	wctx, stop := context.WithCancel(ctx)
	wch := s.client.Watch(clientv3.WithRequireLeader(wctx), aclPrefix, clientv3.WithPrefix())
	go func() {
		defer close(out)
		defer stop()
		for resp := range wch {
			if resp.Err() != nil {
				return
			}
			if len(resp.Events) == 0 {
				continue // a progress notification
			}
			rev := resp.Header.Revision
			select {
			case out <- rev:
			default: // the consumer has not taken the last one yet: replace it
				select {
				case <-out:
				default:
				}
				out <- rev
			}
		}
	}()
	return out
}
