package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/berthhq/berth/api/cluster"
	v4 "github.com/berthhq/berth/api/v4"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// testQuota is small enough to fill in a second: bbolt's file grows by the pages written
// (the quota counts the file's high-water mark, not what it pre-allocates).
const testQuota = 32 << 20

// fill writes 64 KiB values until etcd refuses with ErrNoSpace: under one key (history
// fills etcd) or under a key each (live data does). It fails the test if etcd never does.
func fill(t *testing.T, s *Store, history bool) {
	t.Helper()
	val := strings.Repeat("x", fillValue)
	for i := range 2 * testQuota / fillValue {
		key := prefix + "fill/0"
		if !history {
			key = fmt.Sprintf("%sfill/%d", prefix, i)
		}
		_, err := s.client.Put(context.Background(), key, val)
		if errors.Is(wrapEtcd(err), ErrNoSpace) {
			return
		}
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	t.Fatalf("etcd took %d MiB under a %d MiB quota", 2*testQuota>>20, testQuota>>20)
}

// fillValue is small enough that the values of a full etcd leave few free pages between
// them (1 MiB ones leave up to a fifth of the file free, 256 KiB ones up to 21% when the
// machine is busy): live data then fills the quota well past the 80% that recovery
// counts as live data.
const fillValue = 64 << 10

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
			s := openOwnStore(t, Config{QuotaBytes: testQuota})
			s.background.stop() // the NOSPACE watch would race the recovery under test
			ctx := context.Background()
			fill(t, s, tt.history)
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
			if !m.Defragmented || m.Error != "" || m.Quota != testQuota || m.SizeBefore < testQuota*3/4 {
				t.Fatalf("member %+v: want defragmented, its quota, and a full file before", m)
			}
			if tt.history && m.SizeAfter > testQuota/4 {
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
				if _, err := s.client.Delete(ctx, prefix+"fill/", clientv3.WithPrefix()); err != nil {
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
