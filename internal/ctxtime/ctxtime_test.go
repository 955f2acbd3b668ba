package ctxtime

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("Sleep: %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on an ended context: %v, want context.Canceled", err)
	}
	if err := Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep(0) on an ended context: %v, want context.Canceled", err)
	}
}

func TestEveryUntilError(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := EveryUntilError(context.Background(), time.Millisecond, func() error {
		if n++; n == 3 {
			return stop
		}
		return nil
	})
	if err != stop || n != 3 {
		t.Fatalf("EveryUntilError: %v after %d ticks, want stop after 3", err, n)
	}
}

func TestEveryEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	Every(ctx, time.Millisecond, func() {
		if n++; n == 2 {
			cancel()
		}
	})
	if n != 2 {
		t.Fatalf("Every ticked %d times, want 2 (it ends with its context)", n)
	}
}

func TestBackoffGrowsToItsMaxAndResets(t *testing.T) {
	b := NewBackoff(100*time.Millisecond, time.Second)
	within := func(d, want time.Duration) bool { return d >= want*8/10 && d <= want*12/10 }
	for i, want := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		if d := b.Next(); !within(d, want*time.Millisecond) {
			t.Fatalf("wait %d: %s, want %dms ±20%%", i, d, want)
		}
	}
	b.Reset()
	if d := b.Next(); !within(d, 100*time.Millisecond) {
		t.Fatalf("after Reset: %s, want 100ms ±20%%", d)
	}
}
