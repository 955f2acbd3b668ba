// Package storetest gives the tests of packages above the store one real embedded etcd
// per test package, and a way to start each test from an empty key space.
package storetest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/berthhq/berth/internal/store"
	clientv3 "go.etcd.io/etcd/client/v3"
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
	s, err := store.Open(context.Background(), store.Config{DataDir: dir, Logger: QuietLogger()})
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
	if _, err := s.Client().Delete(context.Background(), "/berth/v1/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
}

// QuietLogger discards logs.
func QuietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
