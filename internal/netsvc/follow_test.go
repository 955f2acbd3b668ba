package netsvc

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// Follow waits for the first list, syncs after changes and retries a failed sync by
// itself.
func TestFollow(t *testing.T) {
	cat := NewCatalog("cluster.local")
	changed := cat.Subscribe()
	var calls atomic.Int64
	fail := atomic.Bool{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Follow(ctx, cat, changed, nil, "test", slog.New(slog.NewTextHandler(io.Discard, nil)), func(context.Context) error {
			calls.Add(1)
			if fail.Load() {
				return errors.New("boom")
			}
			return nil
		})
	}()
	defer func() { cancel(); <-done }()
	wait := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%s: %d syncs", what, calls.Load())
			}
		}
	}
	cat.Put(webService())
	time.Sleep(50 * time.Millisecond)
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d syncs before the catalog was listed", n)
	}
	cat.Replace(v4.KindService, []v4.Object{webService()})
	cat.Replace(v4.KindEndpoint, nil)
	wait("the first sync", func() bool { return calls.Load() >= 1 })
	fail.Store(true)
	n := calls.Load()
	cat.Put(webService())
	wait("a retry after a failure, with no change", func() bool { return calls.Load() >= n+2 })
}
