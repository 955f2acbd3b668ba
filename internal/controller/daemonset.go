package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/scheduler/feed"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
)

// DaemonsetController keeps one task group of every daemonset on each eligible node. It
// reacts to node events (a node that joins, becomes ready or is enabled gets its task
// group at once), restarts a task group on its own node per the restart policy, never
// moves one elsewhere, rolls a new template out node by node, and removes the task
// groups of deleted nodes and daemonsets.
type DaemonsetController struct {
	base
	opts  Options
	queue *queue[scheduler.AppKey]

	mu    sync.Mutex
	known map[scheduler.AppKey]bool // daemonsets seen, queued again when nodes change
	nodes map[string]string         // node name -> nodeShape, to skip heartbeats
	// nodeCache is the shared cache of nodes.
	nodeCache *cache.Cache
}

// NewDaemonsetController builds the controller; Run drives it.
func NewDaemonsetController(st *store.Store, f *feed.Feed, opts Options) *DaemonsetController {
	opts = opts.withDefaults()
	log := opts.Logger.With("controller", "daemonset")
	b := newBase(st, f, opts, log)
	return &DaemonsetController{base: b, opts: opts, queue: newQueue[scheduler.AppKey](),
		known: map[scheduler.AppKey]bool{}, nodes: map[string]string{}, nodeCache: b.cache(v4.KindNode)}
}

// Run watches daemonsets, task groups and nodes and reconciles until ctx ends.
func (c *DaemonsetController) Run(ctx context.Context) error {
	daemonsets := c.cache(v4.KindDaemonset)
	return loop{feed: c.feed, caches: []*cache.Cache{c.tgs.cache, c.nodeCache, daemonsets},
		follow: []func(context.Context){
			follow(daemonsets, c.log, c.enqueueObject),
			follow(c.tgs.cache, c.log, c.enqueueOwner),
			func(ctx context.Context) { watchCache(ctx, c.nodeCache, c.log, c.forgetNodes, c.nodeEvent) },
		},
		resync: c.enqueueObject, resyncFrom: []*cache.Cache{daemonsets},
		work: func(ctx context.Context) {
			work(ctx, "daemonset", c.opts.Metrics, appWorkers, c.queue, c.log, c.recorder, aboutApp, c.reconcile)
		}}.run(ctx)
}

func (c *DaemonsetController) enqueueObject(o v4.Object) {
	m := o.GetMeta()
	key := scheduler.AppKey{Kind: v4.KindDaemonset, Namespace: m.Namespace, Name: m.Name}
	c.mu.Lock()
	c.known[key] = true
	c.mu.Unlock()
	c.queue.Add(key)
}

func (c *DaemonsetController) enqueueOwner(o v4.Object) {
	tg, ok := o.(*v4.TaskGroup)
	if !ok || tg.Spec.Owner.Kind != v4.KindDaemonset {
		return
	}
	c.queue.Add(scheduler.AppKey{Kind: v4.KindDaemonset, Namespace: tg.Metadata.Namespace, Name: tg.Spec.Owner.Name})
}

// forgetNodes runs before a new node watch lists every node again.
func (c *DaemonsetController) forgetNodes() {
	c.mu.Lock()
	c.nodes = map[string]string{}
	c.mu.Unlock()
}

// nodeEvent queues every daemonset when a node joined, left, or changed in a way that
// matters to placement. Heartbeats rewrite the node every few seconds; they are skipped.
func (c *DaemonsetController) nodeEvent(ev store.Event) {
	n, ok := ev.Object.(*v4.Node)
	if !ok {
		return
	}
	shape := nodeShape(n)
	c.mu.Lock()
	prev, seen := c.nodes[n.Metadata.Name]
	if ev.Type == store.Deleted {
		delete(c.nodes, n.Metadata.Name)
	} else {
		c.nodes[n.Metadata.Name] = shape
	}
	keys := slices.Collect(maps.Keys(c.known))
	c.mu.Unlock()
	if ev.Type != store.Deleted && seen && prev == shape {
		return
	}
	for _, k := range keys {
		c.queue.Add(k)
	}
}

// nodeShape is what placement reads of a node: its spec, labels and phase, not the
// heartbeat time or the agent's address.
func nodeShape(n *v4.Node) string {
	b, err := json.Marshal(struct {
		Spec   v4.NodeSpec
		Labels map[string]string
		Phase  string
	}{n.Spec, n.Metadata.Labels, n.Status.Phase})
	if err != nil { // cannot happen for these types; treat the node as changed
		return fmt.Sprint(time.Now().UnixNano())
	}
	return string(b)
}

// reconcile brings one daemonset to its spec on every node and returns when to look again.
func (c *DaemonsetController) reconcile(ctx context.Context, key scheduler.AppKey) (time.Duration, error) {
	obj, err := c.store.Get(ctx, key.Kind, key.Namespace, key.Name)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return 0, err
	}
	byNode, err := c.taskGroupsOf(ctx, key)
	if err != nil {
		return 0, err
	}
	if obj == nil { // deleted: stop and remove everything it had
		all := flatten(byNode)
		c.guard.forget(key.Kind, key.Namespace, key.Name)
		if len(all) == 0 {
			c.mu.Lock()
			delete(c.known, key)
			c.mu.Unlock()
			c.forget(key.String())
			return 0, nil
		}
		c.eventOnce(key.String(), "deleted", key, v4.EventNormal, "Deleting",
			fmt.Sprintf("daemonset deleted: stopping and removing its %d task groups", len(all)))
		return c.removeAll(ctx, all), nil
	}
	nodes, err := c.listNodes()
	if err != nil {
		return 0, err
	}
	ds := obj.(*v4.Daemonset)
	if msg := c.guard.check(ds); msg != "" { // what runs stays; no node gets a new one
		st := ds.Status
		st.Updated, st.Message = time.Time{}, msg
		return 0, c.updateStatus(ctx, key, st)
	}
	p := newDaemonPass(c, key, ds, nodes, byNode)
	if err := p.run(ctx); err != nil {
		return 0, err
	}
	if err := c.updateStatus(ctx, key, p.status()); err != nil {
		return 0, err
	}
	return p.next, nil
}

// listNodes returns the cached nodes (shared: read only).
func (c *DaemonsetController) listNodes() ([]*v4.Node, error) {
	objs, _, err := c.nodeCache.List("", "")
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	nodes := make([]*v4.Node, 0, len(objs))
	for _, o := range objs {
		nodes = append(nodes, o.(*v4.Node))
	}
	return nodes, nil
}

// taskGroupsOf lists the daemonset's task groups by node, the newest run of a node last.
func (c *DaemonsetController) taskGroupsOf(ctx context.Context, key scheduler.AppKey) (map[string][]*v4.TaskGroup, error) {
	tgs, err := c.tgs.ofOwner(ctx, key.Namespace, key.Kind, key.Name)
	if err != nil {
		return nil, fmt.Errorf("list task groups of %s: %w", key, err)
	}
	out := map[string][]*v4.TaskGroup{}
	for _, tg := range tgs {
		out[tg.Spec.Node] = append(out[tg.Spec.Node], tg)
	}
	for _, tgs := range out {
		slices.SortFunc(tgs, byRun)
	}
	return out, nil
}
