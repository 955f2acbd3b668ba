// Package cachetest builds the cache registry of a test the way a process builds its
// own (internal/store/cache): one registry over the test's store, its readers' indexes
// declared before it starts, stopped when the test ends.
package cachetest

import (
	"context"
	"testing"

	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
	"github.com/berthhq/berth/internal/store/storetest"
)

// Registry returns a started registry over st, after declare (each reader's index
// declarations, such as controller.RegisterCaches) ran on it; its caches stop when the
// test ends.
func Registry(t testing.TB, st *store.Store, declare ...func(*cache.Registry) error) *cache.Registry {
	t.Helper()
	r := cache.NewRegistry(st, storetest.QuietLogger())
	for _, d := range declare {
		if err := d(r); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.Start(ctx)
	t.Cleanup(func() { cancel(); r.Wait() })
	return r
}
