package store

import (
	"context"
	"sync/atomic"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// watchFloor is the newest revision any watch of the embedded member has received: a
// serializable read must be at least as new to be sure it sees what a watcher was told
// (soleMemberKV).
type watchFloor struct {
	rev atomic.Int64
	// local counts the reads served serializable; fellShort those of them asked again
	// because they were older than the floor.
	local, fellShort atomic.Uint64
}

func (f *watchFloor) load() int64 { return f.rev.Load() }

// LocalReads reports how many reads the embedded member served from its applied state
// while alone, and how many of them were asked again (linearizable) because a watch had
// been told of a newer revision (reads.go).
func (s *Store) LocalReads() (served, askedAgain uint64) {
	return s.floor.local.Load(), s.floor.fellShort.Load()
}

// raise moves the floor up to rev; never down.
func (f *watchFloor) raise(rev int64) {
	for {
		cur := f.rev.Load()
		if rev <= cur || f.rev.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// flooredWatchClient raises floor with every watch response the member sends, before
// clientv3 hands its events on.
type flooredWatchClient struct {
	pb.WatchClient
	floor *watchFloor
}

func (c flooredWatchClient) Watch(ctx context.Context, opts ...grpc.CallOption) (pb.Watch_WatchClient, error) {
	stream, err := c.WatchClient.Watch(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return flooredWatchStream{Watch_WatchClient: stream, floor: c.floor}, nil
}

type flooredWatchStream struct {
	pb.Watch_WatchClient
	floor *watchFloor
}

func (s flooredWatchStream) Recv() (*pb.WatchResponse, error) {
	resp, err := s.Watch_WatchClient.Recv()
	if err == nil {
		s.floor.raise(resp.GetHeader().GetRevision())
	}
	return resp, err
}

// blankWatcher hands etcd's in-process watch server a context whose String does not read
// the caller's values, as etcd's own in-process client does: gRPC's tracing formats the
// context, which would race with the caller's writes of those values.
type blankWatcher struct{ clientv3.Watcher }

func (w blankWatcher) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	return w.Watcher.Watch(blankContext{ctx}, key, opts...)
}

type blankContext struct{ context.Context }

func (blankContext) String() string { return "(blankCtx)" }
