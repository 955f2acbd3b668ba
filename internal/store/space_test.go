package store

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/berthhq/berth/api/cluster"
	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store/storetest/etcdfill"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Recovery compacts and defragments; it disarms the NOSPACE alarm when history filled
// etcd, and when live data does it says so and leaves the alarm raised (the automatic
// variant, which wants a fifth of the quota free) until the operator deleted data.
func TestRecoverSpace(t *testing.T) {
	tests := []struct {
		name      string
		history   bool
		automatic bool
	}{
		{"history fills etcd, recover by hand", true, false},
		{"history fills etcd, automatic recovery", true, true},
		{"live data fills etcd, automatic recovery", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openOwnStore(t, Config{QuotaBytes: etcdfill.Quota})
			s.background.stop() // the NOSPACE watch would race the recovery under test
			ctx := context.Background()
			etcdfill.Fill(t, s.client, tt.history)
			if noSpace, err := s.NoSpace(ctx); err != nil || !noSpace {
				t.Fatalf("NoSpace = %v, %v after etcd refused a put", noSpace, err)
			}
			err := s.Create(ctx, configMap("space", "after-fill", "x"), Raw{})
			if !errors.Is(err, ErrNoSpace) {
				t.Fatalf("create with etcd full: %v, want ErrNoSpace", err)
			}
			var r cluster.Recovery
			if tt.automatic {
				r, err = s.recoverSpace(ctx, false, liveDataShare)
			} else {
				r, err = s.Recover(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !r.AlarmBefore || r.Disarmed != tt.history || r.LiveData == tt.history || r.CompactedTo == 0 || len(r.Members) != 1 {
				t.Fatalf("recovery %+v: want the alarm before, disarmed %v, live data %v, a compaction, one member", r, tt.history, !tt.history)
			}
			m := r.Members[0]
			t.Logf("in use after the recovery: %.0f%% of the quota", 100*float64(m.InUseAfter)/float64(m.Quota))
			if !m.Defragmented || m.Error != "" || m.Quota != etcdfill.Quota || m.SizeBefore < etcdfill.Quota*3/4 {
				t.Fatalf("member %+v: want defragmented, its quota, and a full file before", m)
			}
			if tt.history && m.SizeAfter > etcdfill.Quota/4 {
				t.Fatalf("member %+v: the file did not shrink", m)
			}
			err = s.Create(ctx, configMap("space", "after-recover", "x"), Raw{})
			if tt.history && err != nil {
				t.Fatalf("create after the recovery: %v", err)
			}
			if !tt.history {
				if !errors.Is(err, ErrNoSpace) || !strings.Contains(s.SpaceAdvice(), "live data fills etcd") {
					t.Fatalf("create after a recovery that freed nothing: %v (advice %q), want ErrNoSpace and live data", err, s.SpaceAdvice())
				}
				// The operator deletes the data; a recovery by hand brings writes back.
				if _, err := s.client.Delete(ctx, etcdfill.Prefix, clientv3.WithPrefix()); err != nil {
					t.Fatalf("deletes must work on a full etcd: %v", err)
				}
				if r, err := s.Recover(ctx); err != nil || !r.Disarmed || r.LiveData {
					t.Fatalf("recovery after the delete: %+v, %v", r, err)
				}
				if err := s.Create(ctx, configMap("space", "after-delete", "x"), Raw{}); err != nil {
					t.Fatalf("create after the delete and recovery: %v", err)
				}
			}
			if noSpace, err := s.NoSpace(ctx); err != nil || noSpace {
				t.Fatalf("NoSpace = %v, %v after the recovery", noSpace, err)
			}
			evs, err := s.ListEvents(ctx, v4.EventFilter{Name: "etcd"})
			if err != nil || len(evs) != 1 || evs[0].Reason != "EtcdSpaceRecovered" || evs[0].Type != v4.EventWarning {
				t.Fatalf("events about etcd: %+v, %v; want one EtcdSpaceRecovered warning", evs, err)
			}
		})
	}
}
