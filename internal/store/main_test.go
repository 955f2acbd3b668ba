package store

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/seal"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// testStore is one embedded etcd shared by the package's tests; each test works in its
// own namespace.
var testStore *Store

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "berth-store-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	testStore, err = Open(context.Background(), Config{DataDir: dir, Logger: quietLogger(), Keyring: testKeyring(seal.NewKey(time.Now()))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer testStore.Close()
	return m.Run()
}

// resetStore removes everything berth wrote, so a test starts clean even when the
// package's tests run several times in one process (go test -count=N).
func resetStore(t testing.TB) {
	t.Helper()
	if _, err := testStore.Client().Delete(context.Background(), prefix, clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	testStore.alive.reset()
	testStore.events.mu.Lock()
	testStore.events.counts = scopeCounts{} // the records it counted are gone
	testStore.events.mu.Unlock()
	testStore.quota.mu.Lock()
	testStore.quota.ledgers = nil // so are the ledgers it remembers
	testStore.quota.mu.Unlock()
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func configMap(ns, name, content string) *v4.ConfigMap {
	return &v4.ConfigMap{
		TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindConfigMap},
		Metadata: v4.ObjectMeta{Name: name, Namespace: ns},
		Datas:    map[string]v4.ConfigMapData{"k": {Type: "file", Content: content}},
	}
}

func content(t *testing.T, obj v4.Object) string {
	t.Helper()
	cm, ok := obj.(*v4.ConfigMap)
	if !ok {
		t.Fatalf("object is a %T, want *v4.ConfigMap", obj)
	}
	return cm.Datas["k"].Content
}
