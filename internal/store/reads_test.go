package store

import (
	"context"
	"slices"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// recordingKVC records how serializable each read etcd is sent would be, and answers a
// serializable read at revision applied and a linearizable one at revision ended.
type recordingKVC struct {
	pb.KVClient
	applied, ended int64
	ranges         []bool   // per Range: serializable
	txns           [][]bool // per Txn: each read's serializable, either branch
}

func (k *recordingKVC) revision(serializable bool) *pb.ResponseHeader {
	if serializable {
		return &pb.ResponseHeader{Revision: k.applied}
	}
	return &pb.ResponseHeader{Revision: k.ended}
}

func (k *recordingKVC) Range(_ context.Context, in *pb.RangeRequest, _ ...grpc.CallOption) (*pb.RangeResponse, error) {
	k.ranges = append(k.ranges, in.Serializable)
	return &pb.RangeResponse{Header: k.revision(in.Serializable)}, nil
}

func (k *recordingKVC) Txn(_ context.Context, in *pb.TxnRequest, _ ...grpc.CallOption) (*pb.TxnResponse, error) {
	var reads []bool
	for _, op := range append(in.Success, in.Failure...) {
		if r := op.GetRequestRange(); r != nil {
			reads = append(reads, r.Serializable)
		}
	}
	k.txns = append(k.txns, reads)
	return &pb.TxnResponse{Header: k.revision(len(reads) > 0 && reads[0])}, nil
}

func TestSoleMemberReadsAreSerializable(t *testing.T) {
	ctx := context.Background()
	get := func(kv clientv3.KV) error { _, err := kv.Get(ctx, "k", clientv3.WithPrefix()); return err }
	readTxn := func(kv clientv3.KV) error {
		_, err := kv.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision("k"), "=", 3)).
			Then(clientv3.OpGet("a"), clientv3.OpGet("b")).Else(clientv3.OpGet("c")).Commit()
		return err
	}
	for _, tc := range []struct {
		name   string
		alone  bool
		floor  int64 // the newest revision watched; the member has applied 10
		read   func(kv clientv3.KV) error
		ranges []bool
		txns   [][]bool
	}{
		{"a get, alone", true, 10, get, []bool{true}, nil},
		{"a get, with others", false, 0, get, []bool{false}, nil},
		{"a get asked serializable, with others", false, 0, func(kv clientv3.KV) error {
			_, err := kv.Get(ctx, "k", clientv3.WithSerializable())
			return err
		}, []bool{true}, nil},
		{"a do of a get, alone", true, 0, func(kv clientv3.KV) error { _, err := kv.Do(ctx, clientv3.OpGet("k")); return err },
			[]bool{true}, nil},
		// A watch was told of revision 11, whose transaction has not ended: the read is
		// asked again, linearizable.
		{"a get, alone, older than a watched event", true, 11, get, []bool{true, false}, nil},
		{"a transaction of reads, alone", true, 10, readTxn, nil, [][]bool{{true, true, true}}},
		{"a transaction of reads, alone, older than a watched event", true, 11, readTxn, nil,
			[][]bool{{true, true, true}, {false, false, false}}},
		{"a transaction of reads, with others", false, 0, func(kv clientv3.KV) error {
			_, err := kv.Txn(ctx).Then(clientv3.OpGet("a")).Commit()
			return err
		}, nil, [][]bool{{false}}},
		{"a transaction that writes, alone", true, 0, func(kv clientv3.KV) error {
			_, err := kv.Txn(ctx).Then(clientv3.OpGet("a"), clientv3.OpPut("b", "v")).Else(clientv3.OpGet("c")).Commit()
			return err
		}, nil, [][]bool{{false, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordingKVC{applied: 10, ended: 11}
			floor := &watchFloor{}
			floor.raise(tc.floor)
			kv := clientv3.NewKVFromKVClient(soleMemberKV{KVClient: rec, alone: func() bool { return tc.alone }, floor: floor}, nil)
			if err := tc.read(kv); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rec.ranges, tc.ranges) || !slices.EqualFunc(rec.txns, tc.txns, slices.Equal) {
				t.Fatalf("serializable: ranges %v, transactions %v; want %v, %v", rec.ranges, rec.txns, tc.ranges, tc.txns)
			}
			if again, want := floor.fellShort.Load(), len(tc.ranges)+len(tc.txns)-1; tc.floor > rec.applied && again != uint64(want) {
				t.Fatalf("%d reads counted as asked again, want %d", again, want)
			}
		})
	}
}

// TestWatchesRaiseTheReadFloor: an event watched through the in-process client raises the
// floor to its revision before the watcher receives it, and never lowers it.
func TestWatchesRaiseTheReadFloor(t *testing.T) {
	s := testStore
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wch := s.client.Watch(ctx, prefix+"floor/", clientv3.WithPrefix())
	put, err := s.client.Put(ctx, prefix+"floor/a", "1")
	if err != nil {
		t.Fatal(err)
	}
	for resp := range wch {
		if len(resp.Events) == 0 {
			continue
		}
		if got := s.floor.load(); got < put.Header.Revision {
			t.Fatalf("floor %d when the event of revision %d arrived", got, put.Header.Revision)
		}
		break
	}
	s.floor.raise(put.Header.Revision - 1)
	if got := s.floor.load(); got < put.Header.Revision {
		t.Fatalf("floor lowered to %d", got)
	}
}
