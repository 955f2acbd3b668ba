package netsvc

import (
	"context"
	"log/slog"
	"time"
)

// updateDelay coalesces a burst of catalog changes into one update.
const updateDelay = 20 * time.Millisecond

// Follow keeps something of the node in line with cat (the service proxy's table, a
// load-balancer group's HAProxy) until ctx ends. It runs sync once cat is first listed
// (what an earlier run left in place serves until then: an empty catalog is not "no
// service"), and again after every signal of changed (the caller's Subscribe) or of tick
// (nil: none), a burst of changes within updateDelay making one update. A failed sync is
// retried at the next change, and after a second at the latest; what names it in the
// log, once until a sync works again.
func Follow(ctx context.Context, cat *Catalog, changed <-chan struct{}, tick <-chan time.Time,
	what string, log *slog.Logger, sync func(context.Context) error) {
	select {
	case <-ctx.Done():
		return
	case <-cat.Synced():
	}
	var failed bool
	for {
		if err := sync(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			if !failed {
				log.Error(what+": the update failed; retrying", "err", err)
			}
			failed = true
		} else if failed {
			log.Info(what + ": up to date again")
			failed = false
		}
		var retry <-chan time.Time
		if failed {
			retry = time.After(time.Second)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-retry:
		case <-tick:
		}
		select { // let a burst of changes land
		case <-ctx.Done():
			return
		case <-time.After(updateDelay):
		}
	}
}
