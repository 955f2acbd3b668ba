package retrysweep

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

type rec struct{ key, pod string }

// A failing undo is retried only when its backoff ran out, the backoff doubles up to
// RetryMax, each failure is reported, and a success or a record gone forgets it.
func TestSweepBackoff(t *testing.T) {
	var reports []int
	s := New(func(r rec) string { return r.key }, func(r rec, attempt int, next time.Time, err error) {
		if r.key != "a" || err == nil {
			t.Errorf("failed(%v, %d, %v)", r, attempt, err)
		}
		reports = append(reports, attempt)
	})
	fail := true
	var tried []string
	undo := func(_ context.Context, r rec) error {
		tried = append(tried, r.key)
		if r.key == "a" && fail {
			return errors.New("busy")
		}
		return nil
	}
	now := time.Unix(1_000_000, 0)
	recs := []rec{{"a", "p"}, {"b", "q"}}
	next := s.Sweep(context.Background(), recs, now, undo)
	if next != now.Add(RetryMin) || s.Pending() != 1 || !slices.Equal(tried, []string{"a", "b"}) {
		t.Fatalf("first pass: next %v, pending %d, tried %v", next, s.Pending(), tried)
	}
	if again := s.Sweep(context.Background(), recs[:1], now.Add(time.Second), undo); again != next || len(tried) != 2 {
		t.Fatalf("retried before the backoff: next %v, tried %v", again, tried)
	}
	at := next
	for i := range 20 {
		next = s.Sweep(context.Background(), recs[:1], at, undo)
		if want := at.Add(min(RetryMin<<(i+1), RetryMax)); next != want {
			t.Fatalf("retry %d due %v, want %v", i+2, next, want)
		}
		at = next
	}
	if len(reports) != 21 || reports[20] != 21 {
		t.Fatalf("reports %v", reports)
	}
	fail = false
	if next := s.Sweep(context.Background(), recs[:1], at, undo); !next.IsZero() || s.Pending() != 0 {
		t.Fatalf("after a success: next %v, pending %d", next, s.Pending())
	}
	fail = true
	s.Sweep(context.Background(), recs[:1], at, undo)
	if next := s.Sweep(context.Background(), nil, at, undo); !next.IsZero() || s.Pending() != 0 {
		t.Fatalf("a record gone: next %v, pending %d", next, s.Pending())
	}
}

// Once ctx ended, a pass stops and an error is no failed attempt.
func TestSweepStopped(t *testing.T) {
	s := New(func(r rec) string { return r.key }, func(rec, int, time.Time, error) { t.Error("reported") })
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	undo := func(ctx context.Context, _ rec) error {
		calls++
		cancel()
		return ctx.Err()
	}
	if next := s.Sweep(ctx, []rec{{"a", ""}, {"b", ""}}, time.Now(), undo); !next.IsZero() || calls != 1 || s.Pending() != 0 {
		t.Errorf("next %v, calls %d, pending %d", next, calls, s.Pending())
	}
}

// Run sweeps at once, again when a retry is due, and returns when ctx ends.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	passes := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, time.Hour, func(now time.Time) time.Time {
			if passes++; passes == 3 {
				cancel()
			}
			return now // due at once
		})
	}()
	<-done
	if passes != 3 {
		t.Errorf("%d passes", passes)
	}
}
