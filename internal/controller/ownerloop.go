package controller

import (
	"context"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store/cache"
)

// ownerLoop is the loop of a controller of batch objects that own their task groups
// (jobs, workflows): it follows the objects of kind and the task groups they own,
// queues an object when it, one of its task groups or a victim of its preemptions
// changes (and at each resync), and reconciles the queued objects with appWorkers
// workers.
func (b *base) ownerLoop(kind v4.Kind, name string, m *Metrics, q *queue[scheduler.AppKey], objs *cacheView,
	onObject func(v4.Object), reconcile func(context.Context, scheduler.AppKey) (time.Duration, error)) loop {
	onTaskGroup := func(o v4.Object) {
		tg, ok := o.(*v4.TaskGroup)
		if !ok {
			return
		}
		if tg.Spec.Owner.Kind == kind {
			q.Add(scheduler.AppKey{Kind: kind, Namespace: tg.Metadata.Namespace, Name: tg.Spec.Owner.Name})
		}
		// A victim of one of kind's preemptions changed (it ended, most likely): the
		// preemptor looks again at once rather than at its next nominationRetry.
		if k, ok := preemptorOf(tg); ok && k.Kind == kind {
			q.Add(k)
		}
	}
	return loop{feed: b.feed, caches: []*cache.Cache{b.tgs.cache, objs.cache},
		follow: []func(context.Context){
			follow(objs.cache, b.log, onObject),
			follow(b.tgs.cache, b.log, onTaskGroup),
		},
		resync: onObject, resyncFrom: []*cache.Cache{objs.cache},
		work: func(ctx context.Context) {
			work(ctx, name, m, appWorkers, q, b.log, b.recorder, aboutApp, reconcile)
		}}
}
