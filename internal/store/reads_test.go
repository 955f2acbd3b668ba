package store

import (
	"context"
	"slices"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// recordingKVC records how serializable each read etcd is sent would be.
type recordingKVC struct {
	pb.KVClient
	ranges []bool   // per Range: serializable
	txns   [][]bool // per Txn: each read's serializable, either branch
}

func (k *recordingKVC) Range(_ context.Context, in *pb.RangeRequest, _ ...grpc.CallOption) (*pb.RangeResponse, error) {
	k.ranges = append(k.ranges, in.Serializable)
	return &pb.RangeResponse{Header: &pb.ResponseHeader{}}, nil
}

func (k *recordingKVC) Txn(_ context.Context, in *pb.TxnRequest, _ ...grpc.CallOption) (*pb.TxnResponse, error) {
	var reads []bool
	for _, op := range append(in.Success, in.Failure...) {
		if r := op.GetRequestRange(); r != nil {
			reads = append(reads, r.Serializable)
		}
	}
	k.txns = append(k.txns, reads)
	return &pb.TxnResponse{Header: &pb.ResponseHeader{}}, nil
}

func TestSoleMemberReadsAreSerializable(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		alone  bool
		read   func(kv clientv3.KV) error
		ranges []bool
		txns   [][]bool
	}{
		{"a get, alone", true, func(kv clientv3.KV) error { _, err := kv.Get(ctx, "k", clientv3.WithPrefix()); return err },
			[]bool{true}, nil},
		{"a get, with others", false, func(kv clientv3.KV) error { _, err := kv.Get(ctx, "k"); return err },
			[]bool{false}, nil},
		{"a get asked serializable, with others", false, func(kv clientv3.KV) error {
			_, err := kv.Get(ctx, "k", clientv3.WithSerializable())
			return err
		}, []bool{true}, nil},
		{"a do of a get, alone", true, func(kv clientv3.KV) error { _, err := kv.Do(ctx, clientv3.OpGet("k")); return err },
			[]bool{true}, nil},
		{"a transaction of reads, alone", true, func(kv clientv3.KV) error {
			_, err := kv.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision("k"), "=", 3)).
				Then(clientv3.OpGet("a"), clientv3.OpGet("b")).Else(clientv3.OpGet("c")).Commit()
			return err
		}, nil, [][]bool{{true, true, true}}},
		{"a transaction of reads, with others", false, func(kv clientv3.KV) error {
			_, err := kv.Txn(ctx).Then(clientv3.OpGet("a")).Commit()
			return err
		}, nil, [][]bool{{false}}},
		{"a transaction that writes, alone", true, func(kv clientv3.KV) error {
			_, err := kv.Txn(ctx).Then(clientv3.OpGet("a"), clientv3.OpPut("b", "v")).Else(clientv3.OpGet("c")).Commit()
			return err
		}, nil, [][]bool{{false, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordingKVC{}
			kv := clientv3.NewKVFromKVClient(soleMemberKV{KVClient: rec, alone: func() bool { return tc.alone }}, nil)
			if err := tc.read(kv); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rec.ranges, tc.ranges) || len(rec.txns) != len(tc.txns) || len(tc.txns) == 1 && !slices.Equal(rec.txns[0], tc.txns[0]) {
				t.Fatalf("serializable: ranges %v, transactions %v; want %v, %v", rec.ranges, rec.txns, tc.ranges, tc.txns)
			}
		})
	}
}
