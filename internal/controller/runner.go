package controller

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/ctxtime"
	"github.com/berthhq/berth/internal/scheduler/feed"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
)

// loop is the shape of every controller's term, run by run: wait for the scheduler's
// snapshot (the controllers that place) and for the caches read, start, follow the
// caches into the queue, resync, and run the workers until the term ends. Every
// goroutine it starts ends before run returns.
type loop struct {
	feed   *feed.Feed     // waited for first, when set
	caches []*cache.Cache // waited for until they hold a full list
	// start, when set, runs once the caches are synced, before anything follows them;
	// spawn starts a goroutine the loop owns. An error ends the term.
	start func(ctx context.Context, spawn func(func())) error
	// follow run on goroutines of their own until the term ends (watches of caches).
	follow []func(ctx context.Context)
	// resync, when set, is handed every object of resyncFrom every resyncEvery: the
	// safety net for missed events, and the clock of the controllers' deadlines.
	resync     func(v4.Object)
	resyncFrom []*cache.Cache
	// work runs until the term ends (the workers).
	work func(ctx context.Context)
}

// run runs the loop until ctx ends; it returns start's error, or nil.
func (l loop) run(ctx context.Context) error {
	if l.feed != nil {
		select {
		case <-l.feed.Synced():
		case <-ctx.Done():
			return nil
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if cache.WaitSynced(ctx, l.caches...) != nil {
		return nil
	}
	if l.start != nil {
		if err := l.start(ctx, wg.Go); err != nil {
			return err
		}
	}
	for _, f := range l.follow {
		wg.Go(func() { f(ctx) })
	}
	if l.resync != nil {
		wg.Go(func() { resyncLoop(ctx, l.resyncFrom, l.resync) })
	}
	l.work(ctx)
	return nil
}

// resyncLoop hands every object of caches to handle every resyncEvery until ctx ends.
func resyncLoop(ctx context.Context, caches []*cache.Cache, handle func(v4.Object)) {
	ctxtime.Every(ctx, resyncEvery, func() {
		for _, c := range caches {
			objs, _, _ := c.List("", "") // index "" always answers
			for _, o := range objs {
				handle(o)
			}
		}
	})
}

// watchCache hands every change of c to handle, with its type, until ctx ends; fresh,
// when not nil, runs before each new watch (whose first events add every object again).
func watchCache(ctx context.Context, c *cache.Cache, log *slog.Logger, fresh func(), handle func(store.Event)) {
	for ctx.Err() == nil {
		ch, err := c.Watch(ctx, "", "", 0)
		if err != nil {
			log.Warn("cache watch failed; retrying", "err", err)
			sleep(ctx, time.Second)
			continue
		}
		if fresh != nil {
			fresh()
		}
		for ev := range ch {
			switch {
			case ev.Type == store.Error:
				// The cache cut a watcher that fell behind; the next watch adds every
				// object again.
				log.Warn("cache watch ended; watching again", "kind", string(c.Kind()), "err", ev.Err)
			case ev.Object != nil:
				handle(ev)
			}
		}
	}
}

// follow is watchCache of an object handler, as a loop's follow.
func follow(c *cache.Cache, log *slog.Logger, handle func(v4.Object)) func(context.Context) {
	return func(ctx context.Context) {
		watchCache(ctx, c, log, nil, func(ev store.Event) { handle(ev.Object) })
	}
}

// RegisterCaches declares on r the caches the controllers read and the indexes they
// list them by; the process calls it before it starts r. On a started registry it
// fails if an index is missing from a cache already running.
func RegisterCaches(r *cache.Registry) error {
	if r == nil {
		return errors.New("no cache registry (Options.Caches)")
	}
	return errors.Join(
		r.Indexes(v4.KindTaskGroup, map[string]cache.IndexFunc{indexOwner: taskGroupOwner, IndexNode: taskGroupNode, IndexNamespace: taskGroupNamespace}),
		r.Index(v4.KindApplication, indexDeployment, childOf),
		r.Index(v4.KindProcess, indexDeployment, childOf),
		r.Index(v4.KindService, indexSelector, serviceSelectorKey),
		r.Index(v4.KindJob, indexCron, jobCronParent),
		r.Index(v4.KindWorkflow, indexCron, workflowCronParent),
		r.Keep(v4.KindWorkflow, keepOfWorkflow), // workflow_keep.go
	)
}
