// Package ctxtime waits on a timer or a ticker until a context ends: the select that
// every loop of the server, the agent and the simulator would otherwise write again.
package ctxtime

import (
	"context"
	"math/rand/v2"
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

// Backoff gives exponentially growing waits with ±20% jitter, from min up to max, so
// that the many clients that lost the same server (agents, the simulator's nodes) do not
// all come back at once. Its zero value is not usable: make one with NewBackoff.
type Backoff struct{ min, max, cur time.Duration }

// NewBackoff returns a Backoff whose first wait is about lo and whose waits grow to hi.
func NewBackoff(lo, hi time.Duration) *Backoff { return &Backoff{min: lo, max: hi} }

// Next returns the wait before the next attempt.
func (b *Backoff) Next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(b.cur*2, b.max)
	}
	return time.Duration(float64(b.cur) * (0.8 + 0.4*rand.Float64()))
}

// Reset makes the next wait the first again (an attempt succeeded).
func (b *Backoff) Reset() { b.cur = 0 }
