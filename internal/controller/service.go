package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
)

// Endpoint writes are coalesced: a change of a task group queues its services after
// endpointsDelay, so a burst of changes (a rollout, a node lost) costs one write per
// service. A service with more than bigEndpoints instances is written at most once every
// bigEndpointsEvery: its object is large, and etcd keeps every version until compaction.
const (
	endpointsDelay    = 20 * time.Millisecond
	bigEndpoints      = 1000
	bigEndpointsEvery = time.Second
	serviceWorkers    = 4
)

// svcKey names a service (and its endpoints object).
type svcKey struct{ Namespace, Name string }

func (k svcKey) String() string { return k.Namespace + "/" + k.Name }

func aboutService(k svcKey) v4.Event {
	return v4.Event{Kind: v4.KindService, Namespace: k.Namespace, Name: k.Name}
}

// ServiceController keeps the endpoints of every service (docs/services.md): the task
// groups of its namespace that its selector matches, ready ones apart, with the address
// of each port. It reads services, task groups and its own endpoints from caches and
// writes an endpoints object only when its content changes.
type ServiceController struct {
	store *store.Store
	log   *slog.Logger
	*recorder
	opts  Options
	queue *queue[svcKey]

	services  *cache.Cache
	endpoints cacheView // its own writes are waited for, as the task groups' are
	tgs       *taskGroupView

	mu        sync.Mutex
	lastWrite map[svcKey]time.Time // of big endpoints objects only
}

// NewServiceController builds the controller; Run drives it.
func NewServiceController(st *store.Store, opts Options) *ServiceController {
	opts = opts.withDefaults()
	log := opts.Logger.With("controller", "service")
	return &ServiceController{store: st, log: log, recorder: newRecorder(st, log), opts: opts,
		queue: newQueue[svcKey](), lastWrite: map[svcKey]time.Time{}}
}

// Run keeps the endpoints until ctx ends.
func (c *ServiceController) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.services = cache.New(c.store, cache.Config{Kind: v4.KindService, Logger: c.log,
		Indexes: map[string]cache.IndexFunc{IndexNamespace: taskGroupNamespace}})
	c.endpoints.cache = cache.New(c.store, cache.Config{Kind: v4.KindEndpoint, Logger: c.log})
	wg.Go(func() { c.services.Run(ctx) })
	wg.Go(func() { c.endpoints.cache.Run(ctx) })
	c.tgs = &taskGroupView{cacheView{cache: c.opts.TaskGroups}}
	if c.tgs.cache == nil {
		c.tgs.cache = NewTaskGroupCache(c.store, c.log, nil)
		wg.Go(func() { c.tgs.cache.Run(ctx) })
	}
	if !synced(ctx, c.services, c.endpoints.cache, c.tgs.cache) {
		return nil
	}
	// Endpoints whose service went while no leader ran are removed.
	if objs, _, err := c.endpoints.cache.List("", ""); err == nil {
		for _, o := range objs {
			c.enqueue(o)
		}
	}
	wg.Go(func() { watchCache(ctx, c.services, c.log, nil, func(ev store.Event) { c.enqueue(ev.Object) }) })
	wg.Go(func() { c.tgs.watch(ctx, c.log, c.enqueueTaskGroup) })
	work(ctx, serviceWorkers, c.queue, c.log, c.recorder, aboutService, c.reconcile)
	return nil
}

// enqueue queues the service an object (a service or an endpoints object) names.
func (c *ServiceController) enqueue(o v4.Object) {
	m := o.GetMeta()
	c.queue.Add(svcKey{m.Namespace, m.Name})
}

// enqueueTaskGroup queues, after endpointsDelay, every service whose selector matches the
// task group. A task group's labels never change, so its deletion (the last state, with
// its labels) reaches the services that held it.
func (c *ServiceController) enqueueTaskGroup(o v4.Object) {
	tg, ok := o.(*v4.TaskGroup)
	if !ok {
		return
	}
	svcs, _, err := c.services.List(IndexNamespace, tg.Metadata.Namespace)
	if err != nil {
		return
	}
	for _, so := range svcs {
		svc := so.(*v4.Service)
		if v4.Selects(svc.Spec.Selector, tg.Spec.Labels) {
			c.queue.AddAfter(svcKey{svc.Metadata.Namespace, svc.Metadata.Name}, endpointsDelay)
		}
	}
}

// reconcile writes the endpoints of one service when they changed, and deletes those of
// a service that is gone.
func (c *ServiceController) reconcile(ctx context.Context, key svcKey) (time.Duration, error) {
	if err := c.endpoints.caughtUp(ctx); err != nil {
		return 0, err
	}
	cur, _ := c.endpoints.cache.Get(key.Namespace, key.Name)
	so, ok := c.services.Get(key.Namespace, key.Name)
	if !ok {
		c.forget("noendpoints/" + key.String())
		c.mu.Lock()
		delete(c.lastWrite, key)
		c.mu.Unlock()
		if cur == nil {
			return 0, nil
		}
		if _, err := c.store.Delete(ctx, v4.KindEndpoint, key.Namespace, key.Name, ""); err != nil && !errors.Is(err, store.ErrNotFound) {
			return 0, fmt.Errorf("delete endpoints of %s: %w", key, err)
		}
		return 0, nil
	}
	svc := so.(*v4.Service)
	if err := c.tgs.caughtUp(ctx); err != nil {
		return 0, err
	}
	tgs, _, err := c.tgs.cache.List(IndexNamespace, key.Namespace)
	if err != nil {
		return 0, err
	}
	list := make([]*v4.TaskGroup, 0, len(tgs))
	for _, o := range tgs {
		list = append(list, o.(*v4.TaskGroup))
	}
	want := endpointsFor(svc, list)
	c.warnEmpty(key, svc, want)
	var have *v4.Endpoints
	if cur != nil {
		have = cur.(*v4.Endpoints)
		if sameEndpoints(have, want) {
			return 0, nil
		}
	}
	if wait := c.writeWait(key, want); wait > 0 {
		return wait, nil
	}
	if have == nil {
		err = c.store.Create(ctx, want, store.Raw{})
		if errors.Is(err, store.ErrAlreadyExists) {
			err = store.ErrConflict // the cache is behind: look again
		}
	} else {
		want.Metadata.ResourceVersion = have.Metadata.ResourceVersion
		want.Metadata.CreationTimestamp = have.Metadata.CreationTimestamp
		err = c.store.Update(ctx, want, store.Raw{})
	}
	if err != nil {
		return 0, fmt.Errorf("write endpoints of %s: %w", key, err)
	}
	c.endpoints.wrote(want.Metadata.ResourceVersion)
	return 0, nil
}

// sameEndpoints reports whether two endpoints objects say the same.
func sameEndpoints(a, b *v4.Endpoints) bool {
	return reflect.DeepEqual(a.Endpoints, b.Endpoints) && reflect.DeepEqual(a.NotReady, b.NotReady) &&
		reflect.DeepEqual(a.Metadata.Labels, b.Metadata.Labels)
}

// writeWait is how long the endpoints of a big service must wait before they are
// written again (0: now), and records the write it allows.
func (c *ServiceController) writeWait(key svcKey, want *v4.Endpoints) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(want.Endpoints)+len(want.NotReady) <= bigEndpoints {
		delete(c.lastWrite, key)
		return 0
	}
	if wait := bigEndpointsEvery - time.Since(c.lastWrite[key]); wait > 0 {
		return wait
	}
	c.lastWrite[key] = time.Now()
	return 0
}

// warnEmpty records a Warning event, once while it lasts, for a service whose selector
// matches no instance.
func (c *ServiceController) warnEmpty(key svcKey, svc *v4.Service, ep *v4.Endpoints) {
	id := "noendpoints/" + key.String()
	if len(ep.Endpoints)+len(ep.NotReady) > 0 {
		c.forget(id)
		return
	}
	c.recordOnce(id, labelSelector(svc.Spec.Selector), v4.Event{Type: v4.EventWarning, Reason: "NoEndpoints",
		Kind: v4.KindService, Namespace: key.Namespace, Name: key.Name,
		Message: fmt.Sprintf("the selector %s matches no instance in namespace %s", labelSelector(svc.Spec.Selector), key.Namespace)})
}
