package store

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/etcdserver"
	"google.golang.org/grpc"
)

// soleMemberKV serves the data path's reads from the embedded member's applied state
// (serializable) while that member is the only member of its etcd cluster, and as etcd's
// default linearizable reads otherwise. It sits under clientv3, on etcd's requests, so
// that it takes every read: a Get, a Do of a get, and a transaction of reads only (an
// apply's look at the keys it replaces, a batched update's look at the sizes it changes).
//
// A linearizable read confirms the leader's commit index through raft and waits until
// the member has applied every entry committed before it: under a write burst that is
// the whole backlog of the apply loop (docs/store.md, "Reads"). With one member the wait
// buys nothing: etcd answers a write only once the member that took it has applied it,
// and no other member exists to have taken one, so everything answered before a read
// began is already in the applied state the read sees.
//
// "Only member" counts learners: a learner receives entries as soon as the leader has
// applied its addition, and its promotion is a later entry, so a member alone in its
// applied membership has sent no entry to anyone. Berth adds members as learners only
// (Store.AddMember), so no voter can join ahead of the membership the check reads.
type soleMemberKV struct {
	pb.KVClient
	alone func() bool
}

// Range reads serializably while the member is alone. The request is the caller's own
// (clientv3 builds one per call).
func (kv soleMemberKV) Range(ctx context.Context, in *pb.RangeRequest, opts ...grpc.CallOption) (*pb.RangeResponse, error) {
	if !in.Serializable && kv.alone() {
		in.Serializable = true
	}
	return kv.KVClient.Range(ctx, in, opts...)
}

// Txn makes a transaction of reads only serializable while the member is alone (etcd
// serves it so when every one of its reads is). A transaction that writes goes through
// raft whatever its reads say.
func (kv soleMemberKV) Txn(ctx context.Context, in *pb.TxnRequest, opts ...grpc.CallOption) (*pb.TxnResponse, error) {
	if readOnly(in) && kv.alone() {
		for _, ops := range [][]*pb.RequestOp{in.Success, in.Failure} {
			for _, op := range ops {
				op.GetRequestRange().Serializable = true
			}
		}
	}
	return kv.KVClient.Txn(ctx, in, opts...)
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

// memberAlone reports whether srv's applied membership holds srv alone.
func memberAlone(srv *etcdserver.EtcdServer) func() bool {
	return func() bool {
		ms := srv.Cluster().Members()
		return len(ms) == 1 && ms[0].ID == srv.MemberID()
	}
}
