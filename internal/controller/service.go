package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
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
	endpoints cacheView    // its own writes are waited for, as the task groups' are
	tgs       *cache.Cache // the shared task group cache, followed into labels
	labels    *labelIndex  // the task groups by label
	vips      *vipAllocator
	grace     graceTiming // when an empty service warns (service_noendpoints.go)

	mu        sync.Mutex
	lastWrite map[svcKey]time.Time // of big endpoints objects only
	clearVIP  map[svcKey]bool      // endpoints whose VIP cannot be kept (set before the workers run)
	noVIP     map[svcKey]bool      // services waiting for a VIP to be given back
}

// NewServiceController builds the controller; Run drives it.
func NewServiceController(st *store.Store, opts Options) *ServiceController {
	opts = opts.withDefaults()
	log := opts.Logger.With("controller", "service")
	return &ServiceController{store: st, log: log, recorder: newRecorder(st, log), opts: opts,
		queue: newQueue[svcKey](), labels: newLabelIndex(), lastWrite: map[svcKey]time.Time{}, clearVIP: map[svcKey]bool{},
		noVIP: map[svcKey]bool{}, services: opts.Caches.For(v4.KindService), endpoints: cacheView{cache: opts.Caches.For(v4.KindEndpoint)},
		tgs: opts.Caches.For(v4.KindTaskGroup), grace: graceTiming{start: opts.StartGrace, unit: opts.HealthTimeUnit}}
}

// Run keeps the endpoints until ctx ends.
func (c *ServiceController) Run(ctx context.Context) error {
	return loop{caches: []*cache.Cache{c.services, c.endpoints.cache, c.tgs}, start: c.start,
		follow: []func(context.Context){
			follow(c.services, c.log, c.enqueue),
			func(ctx context.Context) {
				watchCache(ctx, c.tgs, c.log, c.labels.reset, func(ev store.Event) {
					c.labels.apply(ev)
					c.enqueueTaskGroup(ev.Object)
				})
			},
		},
		work: func(ctx context.Context) {
			work(ctx, "service", c.opts.Metrics, serviceWorkers, c.queue, c.log, c.recorder, aboutService, c.reconcile)
		}}.run(ctx)
}

// start takes the VIPs the endpoints hold and queues every endpoints object; endpoints
// whose service went while no leader ran are removed.
func (c *ServiceController) start(context.Context, func(func())) error {
	cidr := c.opts.ServiceCIDR
	if !cidr.IsValid() {
		cidr = DefaultServiceCIDR
	}
	vips, err := newVIPAllocator(cidr)
	if err != nil {
		return err
	}
	c.vips = vips
	objs, _, err := c.endpoints.cache.List("", "")
	if err != nil {
		return err
	}
	for _, o := range objs {
		if ip := o.(*v4.Endpoints).VIP; ip != "" && !c.vips.reserve(ip) {
			c.log.Warn("endpoints hold a VIP outside the service range or taken twice; it is replaced", "service", objKey(o), "vip", ip)
			c.clearVIP[svcKey{o.GetMeta().Namespace, o.GetMeta().Name}] = true
		}
		c.enqueue(o)
	}
	return nil
}

// enqueue queues the service an object (a service or an endpoints object) names.
func (c *ServiceController) enqueue(o v4.Object) {
	m := o.GetMeta()
	c.queue.Add(svcKey{m.Namespace, m.Name})
}

// enqueueTaskGroup queues, after endpointsDelay, every service whose selector matches the
// task group. A task group's labels never change, so its deletion (the last state, with
// its labels) reaches the services that held it. Services are found by the first label
// of their selector (indexSelector): one lookup per label of the task group, not a look
// at every service of its namespace for each status change of each instance.
func (c *ServiceController) enqueueTaskGroup(o v4.Object) {
	tg, ok := o.(*v4.TaskGroup)
	if !ok {
		return
	}
	ns := tg.Metadata.Namespace
	for k, v := range tg.Spec.Labels {
		svcs, _, err := c.services.List(indexSelector, labelKey(ns, k, v))
		if err != nil {
			return
		}
		for _, so := range svcs {
			svc := so.(*v4.Service)
			if v4.Selects(svc.Spec.Selector, tg.Spec.Labels) {
				c.queue.AddAfter(svcKey{ns, svc.Metadata.Name}, endpointsDelay)
			}
		}
	}
}

// indexSelector indexes services by the first label (in key order) of their selector, in
// their namespace (labelKey): a task group's services are among those indexed under one
// of its labels.
const indexSelector = "selector"

func serviceSelectorKey(o v4.Object) string {
	svc := o.(*v4.Service)
	keys := slices.Sorted(maps.Keys(svc.Spec.Selector))
	if len(keys) == 0 {
		return "" // selects nothing
	}
	return labelKey(svc.Metadata.Namespace, keys[0], svc.Spec.Selector[keys[0]])
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
		c.forget("noendpoints/"+key.String(), "novip/"+key.String())
		c.mu.Lock()
		delete(c.lastWrite, key)
		delete(c.noVIP, key)
		c.mu.Unlock()
		if cur == nil {
			return 0, nil
		}
		if _, err := c.store.Delete(ctx, v4.KindEndpoint, key.Namespace, key.Name, ""); err != nil && !errors.Is(err, store.ErrNotFound) {
			return 0, fmt.Errorf("delete endpoints of %s: %w", key, err)
		}
		c.releaseVIP(key, cur.(*v4.Endpoints).VIP)
		return 0, nil
	}
	svc := so.(*v4.Service)
	matched := c.labels.matching(key.Namespace, svc.Spec.Selector)
	want := endpointsFor(svc, matched)
	recheck := c.warnEmpty(key, svc, want, matched)
	var have *v4.Endpoints
	if cur != nil {
		have = cur.(*v4.Endpoints)
	}
	allocated := c.assignVIP(key, svc, have, want)
	if have != nil && sameEndpoints(have, want) {
		return recheck, nil
	}
	if wait := c.writeWait(key, want); wait > 0 {
		c.releaseVIP(key, allocated)
		return soonest(wait, recheck), nil
	}
	var err error
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
		c.releaseVIP(key, allocated)
		return 0, fmt.Errorf("write endpoints of %s: %w", key, err)
	}
	if have != nil && have.VIP != "" && have.VIP != want.VIP {
		c.releaseVIP(key, have.VIP)
	}
	c.endpoints.wrote(want.Metadata.ResourceVersion)
	return recheck, nil
}

// soonest is the sooner of two waits, 0 meaning none.
func soonest(a, b time.Duration) time.Duration {
	if a == 0 || b > 0 && b < a {
		return b
	}
	return a
}

// sameEndpoints reports whether two endpoints objects say the same.
func sameEndpoints(a, b *v4.Endpoints) bool {
	return a.VIP == b.VIP && reflect.DeepEqual(a.Endpoints, b.Endpoints) && reflect.DeepEqual(a.NotReady, b.NotReady) &&
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

// warnEmpty records a NoEndpoints Warning event, once while it lasts, for a service
// with no ready instance once its instances had their start grace (judgeEmpty), and
// returns when to look again for a warning not yet due (0: no need).
func (c *ServiceController) warnEmpty(key svcKey, svc *v4.Service, ep *v4.Endpoints, matched []*v4.TaskGroup) time.Duration {
	id := "noendpoints/" + key.String()
	v := judgeEmpty(svc, ep, matched, c.grace, time.Now())
	if !v.warn {
		if len(ep.Endpoints) > 0 {
			c.forget(id)
		}
		return v.wait
	}
	// One warning while the service has no ready instance, whichever way it is empty (a
	// scale to zero: its instances stopping, then none left).
	c.recordOnce(id, labelSelector(svc.Spec.Selector), v4.Event{Type: v4.EventWarning, Reason: "NoEndpoints",
		Kind: v4.KindService, Namespace: key.Namespace, Name: key.Name, Message: v.msg})
	return 0
}

// assignVIP gives want the service's virtual IP: the one its endpoints hold, a new one
// for a ClusterIP service without one, none for type None. It returns a VIP it
// allocated now ("" when none), which the caller releases if the write fails. An
// exhausted range is a Warning event on the service, which then has no VIP (its names
// still resolve to its instances).
func (c *ServiceController) assignVIP(key svcKey, svc *v4.Service, have, want *v4.Endpoints) string {
	if svc.Spec.Type == "None" {
		return ""
	}
	c.mu.Lock()
	drop := c.clearVIP[key]
	delete(c.clearVIP, key)
	c.mu.Unlock()
	if have != nil && have.VIP != "" && !drop {
		want.VIP = have.VIP
		return ""
	}
	ip, err := c.vips.allocate()
	c.mu.Lock()
	if err != nil {
		c.noVIP[key] = true
	} else {
		delete(c.noVIP, key)
	}
	c.mu.Unlock()
	if err != nil {
		c.recordOnce("novip/"+key.String(), err.Error(), v4.Event{Type: v4.EventWarning, Reason: "NoVIP",
			Kind: v4.KindService, Namespace: key.Namespace, Name: key.Name,
			Message: fmt.Sprintf("no virtual IP for the service: %v; widen --service-cidr or delete unused services", err)})
		return ""
	}
	c.forget("novip/" + key.String())
	want.VIP = ip
	return ip
}

// releaseVIP gives a VIP back to the range, and looks again at the services waiting for
// one.
func (c *ServiceController) releaseVIP(key svcKey, ip string) {
	if ip == "" {
		return
	}
	c.vips.release(ip)
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.noVIP {
		c.queue.Add(k)
	}
}

// key names an object's service.
func objKey(o v4.Object) string { m := o.GetMeta(); return m.Namespace + "/" + m.Name }
