package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// openOwnStore starts an embedded etcd of its own for a test that compacts or fills it
// (the package's shared one must keep its history and space), closed at the test's end.
func openOwnStore(t *testing.T, cfg Config) *Store {
	t.Helper()
	if cfg.DataDir == "" && len(cfg.Endpoints) == 0 {
		cfg.DataDir = t.TempDir()
	}
	cfg.Logger = quietLogger()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// getAt reads key at revision rev.
func getAt(s *Store, key string, rev int64) error {
	_, err := s.client.Get(context.Background(), key, clientv3.WithRev(rev))
	return wrapEtcd(err)
}

// Two servers sharing one etcd: in each round both try, exactly one compacts (from the
// second round on: the first only records the revision), to the revision it saw one
// round earlier; when it stops, the other takes over.
func TestCompactionOncePerInterval(t *testing.T) {
	a := openOwnStore(t, Config{})
	b := openOwnStore(t, Config{Endpoints: []string{a.self}, EtcdTLS: a.ClientTLS()})
	ctx := context.Background()
	key := prefix + "compact-test"
	var ca, cb compactor
	var revs []int64 // a revision written before each round
	for round := range 4 {
		put, err := a.client.Put(ctx, key, strings.Repeat("x", round+1))
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, put.Header.Revision)
		ra, err := a.compactTick(ctx, &ca)
		if err != nil {
			t.Fatalf("round %d: a: %v", round, err)
		}
		rb, err := b.compactTick(ctx, &cb)
		if err != nil {
			t.Fatalf("round %d: b: %v", round, err)
		}
		switch {
		case round == 0 && (ra != 0 || rb != 0):
			t.Fatalf("round 0 compacted (a to %d, b to %d): nothing was seen an interval ago", ra, rb)
		case round > 0 && (ra == 0) == (rb == 0):
			t.Fatalf("round %d: a compacted to %d, b to %d; want exactly one", round, ra, rb)
		case round > 0 && ra+rb <= revs[round-1]:
			t.Fatalf("round %d compacted to %d, not past the previous round's write %d", round, ra+rb, revs[round-1])
		}
		if round > 0 {
			if err := getAt(a, key, revs[round-1]); !errors.Is(err, ErrCompacted) {
				t.Fatalf("round %d: a read at the previous round's revision %d: %v, want compacted", round, revs[round-1], err)
			}
			if err := getAt(a, key, revs[round]); err != nil {
				t.Fatalf("round %d: this round's revision %d is gone: %v", round, revs[round], err)
			}
		}
	}
	// a stops: b compacts at its next turn.
	rb, err := b.compactTick(ctx, &cb)
	if err != nil || rb == 0 {
		t.Fatalf("b alone: compacted to %d, %v; want a compaction", rb, err)
	}
	last, err := b.lastCompaction(ctx)
	if err != nil || last == nil || last.Revision != rb {
		t.Fatalf("last compaction %+v, %v; want revision %d", last, err, rb)
	}
}

// The compactor runs by itself: after two intervals, the revisions before the first
// are gone.
func TestPeriodicCompaction(t *testing.T) {
	s := openOwnStore(t, Config{CompactionInterval: 200 * time.Millisecond})
	ctx := context.Background()
	key := prefix + "periodic"
	put, err := s.client.Put(ctx, key, "1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.Put(ctx, key, "2"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := getAt(s, key, put.Header.Revision)
		if errors.Is(err, ErrCompacted) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("revision %d still readable after 15 s of a 200 ms compaction interval", put.Header.Revision)
		}
		time.Sleep(100 * time.Millisecond)
	}
	last, err := s.lastCompaction(ctx)
	if err != nil || last == nil || last.Revision <= put.Header.Revision {
		t.Fatalf("last compaction %+v, %v; want one past revision %d", last, err, put.Header.Revision)
	}
}

func TestWorthDefragmenting(t *testing.T) {
	now := time.Now()
	const gib, mib = 1 << 30, 1 << 20
	tests := []struct {
		name string
		m    memberSizes
		last time.Time
		want bool
	}{
		{"fresh small database", memberSizes{Size: 20 * mib, InUse: 19 * mib, Quota: 8 * gib}, time.Time{}, false},
		{"100 MiB free", memberSizes{Size: 1 * gib, InUse: 900 * mib, Quota: 8 * gib}, time.Time{}, true},
		{"100 MiB free, defragmented 10 minutes ago", memberSizes{Size: 1 * gib, InUse: 900 * mib, Quota: 8 * gib}, now.Add(-10 * time.Minute), false},
		{"100 MiB free, defragmented 2 hours ago", memberSizes{Size: 1 * gib, InUse: 900 * mib, Quota: 8 * gib}, now.Add(-2 * time.Hour), true},
		{"half free of a small file", memberSizes{Size: 40 * mib, InUse: 10 * mib, Quota: 8 * gib}, time.Time{}, false},
		{"half free past a quarter of the quota", memberSizes{Size: 10 * mib, InUse: 4 * mib, Quota: 32 * mib}, time.Time{}, true},
		{"near the quota, a tenth free, just defragmented", memberSizes{Size: 30 * mib, InUse: 26 * mib, Quota: 32 * mib}, now.Add(-time.Minute), true},
		{"near the quota, all in use", memberSizes{Size: 30 * mib, InUse: 29 * mib, Quota: 32 * mib}, time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := worthDefragmenting(tt.m, tt.last, now); got != tt.want {
				t.Errorf("worthDefragmenting(%+v) = %v, want %v", tt.m, got, tt.want)
			}
		})
	}
}
