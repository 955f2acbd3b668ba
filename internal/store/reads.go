package store

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdserver"
)

// soleMemberKV serves the data path's reads from the embedded member's applied state
// (serializable) while that member is the only member of its etcd cluster, and as etcd's
// default linearizable reads otherwise.
//
// A linearizable read confirms the leader's commit index through raft and waits until
// the member has applied every entry committed before it: under a write burst that is
// the whole backlog of the apply loop, and a user's GET waited hundreds of milliseconds
// behind the controllers' and agents' writes (docs/store.md, "Reads"). With one member
// the wait buys nothing: etcd answers a write only once the member that took it has
// applied it, and no other member exists to have taken one, so everything answered
// before a read began is already in the applied state the read sees.
//
// "Only member" counts learners: a learner receives entries as soon as the leader has
// applied its addition, and its promotion is a later entry, so a member alone in its
// applied membership has sent no entry to anyone. Berth adds members as learners only
// (Store.AddMember), so no voter can join ahead of the membership the check reads.
type soleMemberKV struct {
	clientv3.KV
	alone func() bool
}

// Get reads as a serializable range while the member is alone. Do is left as etcd has
// it, linearizable unless asked otherwise, for the reads that must hear from raft
// (Store.Ready).
func (kv soleMemberKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	if kv.alone() {
		// A copy: the caller's slice may have room past its length, shared with others.
		opts = append(opts[:len(opts):len(opts)], clientv3.WithSerializable())
	}
	return kv.KV.Get(ctx, key, opts...)
}

// memberAlone reports whether srv's applied membership holds srv alone.
func memberAlone(srv *etcdserver.EtcdServer) func() bool {
	return func() bool {
		ms := srv.Cluster().Members()
		return len(ms) == 1 && ms[0].ID == srv.MemberID()
	}
}
