// Package storetest gives the tests of packages above the store one real embedded etcd
// per test package, a way to start each test from an empty key space, and the records
// many of them start from.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/berthhq/berth/api/cluster"
	"github.com/berthhq/berth/internal/hostports/hostportstest"
	"github.com/berthhq/berth/internal/seal"
	"github.com/berthhq/berth/internal/store"
)

// Run opens an embedded store in a temporary directory, sets *st to it, runs the tests
// and closes it. Use it from TestMain: os.Exit(storetest.Run(m, &testStore)).
func Run(m *testing.M, st **store.Store) int {
	dir, err := os.MkdirTemp("", "berth-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// Secrets are sealed in tests as in production (docs/security.md).
	s, err := store.Open(context.Background(), store.Config{DataDir: dir, Logger: QuietLogger(), Keyring: Keyring()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	*st = s
	return m.Run()
}

// Reset deletes everything berth wrote, so a test starts clean even when a package's
// tests run several times in one process (go test -count=N).
func Reset(t testing.TB, s *store.Store) {
	t.Helper()
	FlushEvents(t, s) // an earlier test's queued records land before, not after
	if _, err := s.Client().Delete(context.Background(), "/berth/v1/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	s.ForgetLeases() // their alive keys went with the rest
}

// Keyring is a new ring of one key, for a test store.
func Keyring() *seal.Keyring {
	r, err := seal.NewKeyring(seal.NewKey(time.Now()))
	if err != nil {
		panic(err) // a fresh key of the right size cannot be refused
	}
	return r
}

// QuietLogger discards logs.
func QuietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Cluster opens n stores, each the embedded etcd member of one "server", joined into one
// cluster through AddMember as the join route does. Their fixed ports come from
// [portLo, portLo+100), the band of the calling test package. Close them in the test.
func Cluster(t testing.TB, n, portLo int) []*store.Store {
	t.Helper()
	ports := hostportstest.FreeInBand(t, 2*n, portLo, 100)
	var out []*store.Store
	for i := range n {
		mc := &store.MemberConfig{Name: fmt.Sprintf("m%d", i),
			PeerListen: fmt.Sprintf("127.0.0.1:%d", ports[2*i]), ClientListen: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1])}
		if i > 0 {
			mc.Join = joinThrough(out[0])
		}
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		s, err := store.Open(ctx, store.Config{DataDir: t.TempDir(), Logger: QuietLogger(), Member: mc})
		cancel()
		if err != nil {
			for _, s := range out {
				s.Close()
			}
			t.Fatalf("open member %d: %v", i, err)
		}
		out = append(out, s)
	}
	return out
}

// joinThrough adds members through s, retrying while etcd says "not now".
func joinThrough(s *store.Store) store.JoinFunc {
	return func(ctx context.Context, name, peerURL string) (cluster.Joined, error) {
		for {
			ic, err := s.AddMember(ctx, name, peerURL)
			if !errors.Is(err, store.ErrUnavailable) || ctx.Err() != nil {
				ans := cluster.Joined{InitialCluster: ic}
				cert, key, caErr := s.JoinCA()
				if caErr != nil {
					return ans, caErr
				}
				ans.CACert, ans.CAKey = string(cert), string(key)
				if r := s.Keyring(); r != nil {
					ans.EncryptionKeys = string(r.Format())
				}
				return ans, err
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
}

// FlushEvents waits until the event records queued in s so far are written
// (store.QueueEvent records them a moment later).
func FlushEvents(t testing.TB, s *store.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.FlushEvents(ctx); err != nil {
		t.Fatal(err)
	}
}
