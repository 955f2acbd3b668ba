package agentapi

import (
	"context"
	"testing"
	"time"
)

// The sweep ends the streams silent for longer than the idle time, once each, and leaves
// the others; a stream it ended is told apart from one a newer stream replaced.
func TestBeatStreamSweepEndsSilentStreams(t *testing.T) {
	var b beatStreams
	now := time.Now()
	open := func(node string, last time.Time) (*liveBeatStream, context.Context) {
		ctx, cancel := context.WithCancel(t.Context())
		s, _ := b.open(node, cancel)
		s.beat(last)
		return s, ctx
	}
	silent, silentCtx := open("silent", now.Add(-beatStreamIdle-time.Minute))
	_, liveCtx := open("live", now.Add(-10*time.Second))
	_, edgeCtx := open("edge", now.Add(-beatStreamIdle+time.Second))

	for i, want := range []int{1, 0} {
		if n := b.sweep(now, beatStreamIdle); n != want {
			t.Fatalf("sweep %d ended %d streams, want %d", i, n, want)
		}
	}
	if silentCtx.Err() == nil || !silent.idled.Load() || silent.replaced.Load() {
		t.Fatalf("the silent stream: ctx %v, idled %v, replaced %v", silentCtx.Err(), silent.idled.Load(), silent.replaced.Load())
	}
	if liveCtx.Err() != nil || edgeCtx.Err() != nil {
		t.Fatal("a stream that beat within the idle time was ended")
	}
	// A beat keeps a stream: the sweep a minute later ends only what went silent since.
	if n := b.sweep(now.Add(time.Minute), beatStreamIdle); n != 1 || edgeCtx.Err() == nil || liveCtx.Err() != nil {
		t.Fatalf("a minute later: %d ended, edge %v, live %v", n, edgeCtx.Err(), liveCtx.Err())
	}
}

// sweepUntil ends with its context.
func TestBeatStreamSweepStops(t *testing.T) {
	var b beatStreams
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); b.sweepUntil(ctx) }()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the sweep did not stop with its context")
	}
}
