package cache

import (
	"context"

	"github.com/berthhq/berth/internal/store"
)

// SharedStore is the store this package's tests run on, for its external tests.
func SharedStore() *store.Store { return testStore }

// Feed makes c's watch of the store the changes of feed (it still lists the store
// first): a benchmark hands the cache changes without writing them to etcd. The watch's
// channel closes when its context ends, as the store's does.
func Feed(c *Cache, feed <-chan store.Event) {
	c.watch = func(ctx context.Context, _ int64) (<-chan store.Event, error) {
		out := make(chan store.Event)
		go func() {
			defer close(out)
			for {
				select {
				case ev := <-feed:
					select {
					case out <- ev:
					case <-ctx.Done():
						return
					}
				case <-ctx.Done():
					return
				}
			}
		}()
		return out, nil
	}
}
