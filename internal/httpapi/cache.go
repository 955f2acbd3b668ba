package httpapi

import (
	"context"
	"net/http"

	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
)

// Synced waits until c holds a full list, or ctx ends (503).
func Synced(ctx context.Context, c *cache.Cache) error {
	if err := cache.WaitSynced(ctx, c); err != nil {
		return Errorf(http.StatusServiceUnavailable, "the %s cache is not synced yet: %v", c.Kind(), err)
	}
	return nil
}

// CacheCurrent waits until c reflects every write to st that completed before the call
// (a list must not miss an object just written), or ctx ends (503).
func CacheCurrent(ctx context.Context, st *store.Store, c *cache.Cache) error {
	if err := Synced(ctx, c); err != nil {
		return err
	}
	rev, err := st.Revision(ctx)
	if err != nil {
		return err
	}
	if err := c.WaitFor(ctx, rev); err != nil {
		return Errorf(http.StatusServiceUnavailable, "the %s cache is behind etcd: %v", c.Kind(), err)
	}
	return nil
}
