package controller

import (
	"context"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/scheduler/feed"
	"github.com/berthhq/berth/internal/store/cache/cachetest"
	"github.com/berthhq/berth/internal/store/storetest"
)

// Two servers campaign; one leads, and when it stops the other takes over. They share
// one process's caches, as one server's successive terms of leadership do: the second
// term declares the caches' needs again (RegisterCaches), which must pass.
func TestManagerElection(t *testing.T) {
	storetest.Reset(t, testStore)
	caches := cachetest.Registry(t, testStore, RegisterCaches)
	f := feed.New(caches, storetest.QuietLogger())
	fctx, fcancel := context.WithCancel(context.Background())
	fdone := make(chan struct{})
	go func() { f.Run(fctx); close(fdone) }()
	defer func() { fcancel(); <-fdone }()

	start := func(id string) (*Manager, context.CancelFunc, chan struct{}) {
		m := NewManager(testStore, f, Options{Logger: storetest.QuietLogger(), Caches: caches}, id)
		m.ttl = 2
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { m.Run(ctx); close(done) }()
		return m, cancel, done
	}
	a, stopA, doneA := start("a")
	waitFor(t, "a leads", func() bool { return a.Leader() })
	b, stopB, doneB := start("b")
	defer func() { stopB(); <-doneB }()
	time.Sleep(500 * time.Millisecond)
	if b.Leader() {
		t.Fatal("two leaders")
	}
	stopA()
	<-doneA
	waitFor(t, "b takes over", func() bool { return b.Leader() })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out: %s", what)
}
