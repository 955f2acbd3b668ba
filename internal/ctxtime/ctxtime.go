// Package ctxtime waits on a timer or a ticker until a context ends: the select that
// every loop of the server, the agent and the simulator would otherwise write again.
package ctxtime

import (
	"context"
	"time"
)

// Sleep waits d or until ctx ends, whichever comes first: nil when it waited d, else
// ctx's error. A d of zero or less does not wait.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Every calls tick every d (the first time after d) until ctx ends.
func Every(ctx context.Context, d time.Duration, tick func()) {
	EveryUntilError(ctx, d, func() error { tick(); return nil })
}

// EveryUntilError calls tick every d (the first time after d) until ctx ends, which
// returns nil, or until tick returns an error, which it returns.
func EveryUntilError(ctx context.Context, d time.Duration, tick func() error) error {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := tick(); err != nil {
			return err
		}
	}
}
