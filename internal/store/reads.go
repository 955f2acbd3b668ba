package store

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdserver"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3rpc"
	"go.etcd.io/etcd/server/v3/proxy/grpcproxy/adapter"
	"google.golang.org/grpc"
)

// inProcessClient is the data path's client of the embedded member: etcd's in-process
// client (v3client) whose reads go through soleMemberKV and whose watches raise floor.
func inProcessClient(srv *etcdserver.EtcdServer, floor *watchFloor) *clientv3.Client {
	c := v3client.New(srv)
	kvc := adapter.KvServerToKvClient(v3rpc.NewQuotaKVServer(srv))
	c.KV = clientv3.NewKVFromKVClient(soleMemberKV{KVClient: kvc, alone: memberAlone(srv), floor: floor}, c)
	wc := adapter.WatchServerToWatchClient(v3rpc.NewWatchServer(srv))
	c.Watcher = blankWatcher{clientv3.NewWatchFromWatchClient(flooredWatchClient{WatchClient: wc, floor: floor}, c)}
	return c
}

// soleMemberKV serves the data path's reads from the embedded member's applied state
// (serializable) while that member is the only member of its etcd cluster, and as etcd's
// default linearizable reads otherwise. It sits under clientv3, on etcd's requests, so
// that it takes every read: a Get, a Do of a get, and a transaction of reads only (an
// apply's look at the keys it replaces, a batched update's look at the sizes it changes).
//
// A linearizable read confirms the leader's commit index through raft and waits until
// the member has applied every entry committed before it: under a write burst that is
// the whole backlog of the apply loop (docs/store.md, "Reads"). With one member most of
// that wait buys nothing: etcd answers a write only once the member that took it has
// applied it, and no other member exists to have taken one, so everything answered
// before a read began is in the applied state the read sees.
//
// Not quite everything a reader may know of, though: etcd hands a write's events to its
// watchers just before the write's transaction ends and becomes visible to reads, so a
// reader woken by an event could read the state before that event, find nothing to do,
// and never be woken again. Every watch of the member raises floor to the revision it
// received before its events go on (flooredWatchClient); a serializable answer older
// than the floor when the read began is thrown away and the read asked again, this time
// linearizable, which waits for that write's end.
//
// "Only member" counts learners: a learner receives entries as soon as the leader has
// applied its addition, and its promotion is a later entry, so a member alone in its
// applied membership has sent no entry to anyone. Berth adds members as learners only
// (Store.AddMember), so no voter can join ahead of the membership the check reads.
type soleMemberKV struct {
	pb.KVClient
	alone func() bool
	floor *watchFloor
}

// Range reads serializably while the member is alone and its answer is as new as every
// event watched before. The request is the caller's own (clientv3 builds one per call).
func (kv soleMemberKV) Range(ctx context.Context, in *pb.RangeRequest, opts ...grpc.CallOption) (*pb.RangeResponse, error) {
	if in.Serializable || !kv.alone() {
		return kv.KVClient.Range(ctx, in, opts...)
	}
	return underFloor(kv.floor, func(local bool) (*pb.RangeResponse, error) {
		in.Serializable = local
		return kv.KVClient.Range(ctx, in, opts...)
	})
}

// Txn makes a transaction of reads only serializable while the member is alone (etcd
// serves it so when every one of its reads is), under the same floor as Range. A
// transaction that writes goes through raft whatever its reads say.
func (kv soleMemberKV) Txn(ctx context.Context, in *pb.TxnRequest, opts ...grpc.CallOption) (*pb.TxnResponse, error) {
	if !readOnly(in) || !kv.alone() {
		return kv.KVClient.Txn(ctx, in, opts...)
	}
	return underFloor(kv.floor, func(local bool) (*pb.TxnResponse, error) {
		setSerializable(in, local)
		return kv.KVClient.Txn(ctx, in, opts...)
	})
}

// underFloor reads locally (read(true)), and again through raft (read(false)) when the
// local answer is older than the floor was when the read began.
func underFloor[R interface{ GetHeader() *pb.ResponseHeader }](floor *watchFloor, read func(local bool) (R, error)) (R, error) {
	least := floor.load()
	resp, err := read(true)
	floor.local.Add(1)
	if err != nil || resp.GetHeader().GetRevision() >= least {
		return resp, err
	}
	floor.fellShort.Add(1)
	return read(false)
}

// readOnly reports whether every operation of the transaction, either way, is a read.
func readOnly(in *pb.TxnRequest) bool {
	for _, ops := range [][]*pb.RequestOp{in.Success, in.Failure} {
		for _, op := range ops {
			if op.GetRequestRange() == nil {
				return false
			}
		}
	}
	return true
}

// setSerializable sets every read of a transaction of reads only.
func setSerializable(in *pb.TxnRequest, on bool) {
	for _, ops := range [][]*pb.RequestOp{in.Success, in.Failure} {
		for _, op := range ops {
			op.GetRequestRange().Serializable = on
		}
	}
}

// memberAlone reports whether srv's applied membership holds srv alone.
func memberAlone(srv *etcdserver.EtcdServer) func() bool {
	return func() bool {
		ms := srv.Cluster().Members()
		return len(ms) == 1 && ms[0].ID == srv.MemberID()
	}
}
