package store

import (
	"context"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// recordingKV records whether each Get it is handed would read serializably.
type recordingKV struct {
	clientv3.KV
	serializable []bool
}

func (k *recordingKV) Get(_ context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	k.serializable = append(k.serializable, clientv3.OpGet(key, opts...).IsSerializable())
	return &clientv3.GetResponse{}, nil
}

func TestSoleMemberReadsAreSerializable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		alone bool
		opts  []clientv3.OpOption
		want  bool
	}{
		{"alone", true, nil, true},
		{"alone, a prefix read", true, []clientv3.OpOption{clientv3.WithPrefix()}, true},
		{"with others", false, nil, false},
		{"with others, a prefix read", false, []clientv3.OpOption{clientv3.WithPrefix()}, false},
		{"with others, asked serializable", false, []clientv3.OpOption{clientv3.WithSerializable()}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordingKV{}
			kv := soleMemberKV{KV: rec, alone: func() bool { return tc.alone }}
			// The caller's slice has room past its length: the read must not write there.
			opts := make([]clientv3.OpOption, len(tc.opts), len(tc.opts)+1)
			copy(opts, tc.opts)
			opts = append(opts, clientv3.WithKeysOnly())[:len(tc.opts)]
			if _, err := kv.Get(context.Background(), "k", opts...); err != nil {
				t.Fatal(err)
			}
			if len(rec.serializable) != 1 || rec.serializable[0] != tc.want {
				t.Fatalf("serializable reads %v, want [%v]", rec.serializable, tc.want)
			}
			if !clientv3.OpGet("k", opts[:len(tc.opts)+1]...).IsKeysOnly() {
				t.Fatal("the read wrote over the caller's option past its slice's length")
			}
		})
	}
}

// The package's store is one embedded member: its data path reads without raft.
func TestAStoreOfOneMemberReadsAlone(t *testing.T) {
	kv, ok := testStore.client.KV.(soleMemberKV)
	if !ok {
		t.Fatalf("the data path's KV is %T, not the sole member's", testStore.client.KV)
	}
	if !kv.alone() {
		t.Fatal("a store of one embedded member does not read alone")
	}
}
