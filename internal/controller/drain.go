package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler/feed"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
)

// Drains (docs/maintenance.md). POST /v1/nodes/{name}/drain disables the node, begins an
// OpDrain on it and annotates it v4.DrainAnnotation. This controller then moves the
// node's application and process instances off it one at a time, each through a move
// (move.go): the next one starts only when the previous replacement is Running and
// healthy, so a service with several instances stays up. All its state is in the store
// (the annotation, the task groups' move annotations), so a new leader carries on.

// Timing of the drain controller.
const (
	drainResync = 10 * time.Second // look at draining nodes again
	drainRetry  = 15 * time.Second // retry an instance that could not move
	lockedRetry = 2 * time.Second  // retry an instance whose application has an operation under way
)

// DrainController drains the nodes annotated v4.DrainAnnotation.
type DrainController struct {
	base
	opts  Options
	queue *queue[nodeName]

	mu       sync.Mutex
	draining map[string]bool      // nodes with the annotation, from the node watch
	backoff  map[string]time.Time // drainID(node, task group) -> when to try moving it again
}

// NewDrainController builds the controller; Run drives it.
func NewDrainController(st *store.Store, f *feed.Feed, opts Options) *DrainController {
	opts = opts.withDefaults()
	log := opts.Logger.With("controller", "drain")
	return &DrainController{base: newBase(st, f, opts, log), opts: opts, queue: newQueue[nodeName](),
		draining: map[string]bool{}, backoff: map[string]time.Time{}}
}

// Run watches nodes and task groups and drains until ctx ends.
func (c *DrainController) Run(ctx context.Context) error {
	nodes := c.cache(v4.KindNode)
	// Task groups come from the shared cache: no watch and no decoding of its own.
	return loop{feed: c.feed, caches: []*cache.Cache{c.tgs.cache, nodes},
		follow: []func(context.Context){
			func(ctx context.Context) { watchCache(ctx, nodes, c.log, nil, c.onNode) },
			follow(c.tgs.cache, c.log, c.onTaskGroup),
		},
		work: func(ctx context.Context) {
			work(ctx, "drain", c.opts.Metrics, 1, c.queue, c.log, c.recorder, aboutNode, c.reconcile)
		}}.run(ctx)
}

func (c *DrainController) onNode(ev store.Event) {
	n, ok := ev.Object.(*v4.Node)
	if !ok {
		return
	}
	name := n.Metadata.Name
	_, annotated := n.Metadata.Annotations[v4.DrainAnnotation]
	c.mu.Lock()
	was := c.draining[name]
	if annotated && ev.Type != store.Deleted {
		c.draining[name] = true
	} else {
		delete(c.draining, name)
	}
	c.mu.Unlock()
	if annotated || was {
		c.queue.Add(nodeName(name))
	}
}

// onTaskGroup wakes the drain of the task group's node: a move's source changing (its
// replacement became ready, it failed) is what lets the drain go on.
func (c *DrainController) onTaskGroup(o v4.Object) {
	tg, ok := o.(*v4.TaskGroup)
	if !ok {
		return
	}
	c.mu.Lock()
	draining := c.draining[tg.Spec.Node]
	c.mu.Unlock()
	if draining {
		c.queue.Add(nodeName(tg.Spec.Node))
	}
}

// reconcile takes one step of a node's drain and returns when to look again.
func (c *DrainController) reconcile(ctx context.Context, key nodeName) (time.Duration, error) {
	name := string(key)
	obj, err := c.store.Get(ctx, v4.KindNode, "", name)
	if errors.Is(err, store.ErrNotFound) {
		c.end(ctx, name)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := obj.(*v4.Node)
	mode, annotated := n.Metadata.Annotations[v4.DrainAnnotation]
	if !annotated {
		c.end(ctx, name) // an operator removed the annotation: the drain is over
		return 0, nil
	}
	if !n.Spec.Disabled { // `berth node enable` cancels the drain
		c.nodeEvent(name, v4.EventWarning, "DrainCancelled", fmt.Sprintf("drain of node %s cancelled: the node was enabled", name))
		return 0, c.finish(ctx, name)
	}
	if e, on := c.store.InMaintenance(ctx); on {
		c.nodeEventOnce(name, "paused", v4.EventWarning, "DrainPaused",
			fmt.Sprintf("drain of node %s paused while the engine is in maintenance (%s)", name, maintenanceReason(e)))
		return maintenanceRecheck, nil
	}
	plan, err := c.plan(ctx, name, mode == v4.DrainForce)
	if err != nil {
		return 0, err
	}
	for _, s := range plan.skipped {
		c.nodeEventOnce(name, "skip/"+s.key, v4.EventNormal, "DrainSkipped", s.why)
	}
	if plan.moving != "" {
		return drainResync, nil // one at a time: the task group events wake it sooner
	}
	if len(plan.candidates) == 0 && plan.waiting == 0 {
		msg := fmt.Sprintf("node %s drained; it stays disabled until `berth node enable %s`", name, name)
		if len(plan.skipped) > 0 {
			msg += fmt.Sprintf("; %d instance(s) left on it: %s", len(plan.skipped), strings.Join(plan.skippedNames(), ", "))
		}
		c.nodeEvent(name, v4.EventNormal, "Drained", msg)
		return 0, c.finish(ctx, name)
	}
	return c.moveNext(ctx, name, plan, mode == v4.DrainForce)
}

// moveNext starts the move of the first candidate that can go now.
func (c *DrainController) moveNext(ctx context.Context, name string, plan drainPlan, force bool) (time.Duration, error) {
	after := drainRetry
	for _, tg := range plan.candidates {
		key := tg.Metadata.Namespace + "/" + tg.Metadata.Name
		_, _, err := RequestMove(ctx, c.store, c.feed, tg.Metadata.Namespace, tg.Metadata.Name,
			v4.MoveRequest{Force: force}, "drain "+name)
		var (
			me     *MoveError
			locked *store.LockedError
		)
		switch {
		case err == nil:
			c.forget(drainID(name, "failure/"+key))
			c.nodeEvent(name, v4.EventNormal, "DrainMoving", fmt.Sprintf("moving %s (%s %s/%s instance %d) off node %s; %d more to move after it",
				tg.Metadata.Name, tg.Spec.Owner.Kind, tg.Metadata.Namespace, tg.Spec.Owner.Name, tg.Spec.Index, name, len(plan.candidates)-1+plan.waiting))
			return drainResync, nil
		case errors.As(err, &locked):
			// Usually the move just done, ending within a reconcile; a scale or rollout
			// of the application is worth saying.
			if locked.Current.Type != v4.OpMove {
				c.nodeEventOnce(name, "locked/"+key, v4.EventNormal, "DrainWaiting", fmt.Sprintf("%s waits for the %s of %s %s to end",
					tg.Metadata.Name, locked.Current.Type, locked.Current.Kind, locked.Current.Name))
			}
			after = lockedRetry
		case errors.As(err, &me):
			c.nodeEventOnce(name, "blocked/"+key, v4.EventWarning, "DrainBlocked",
				fmt.Sprintf("cannot move %s off node %s yet (retrying every %s): %v", tg.Metadata.Name, name, drainRetry, err))
			c.setBackoff(name, key, time.Now().Add(drainRetry))
		default:
			return 0, err
		}
	}
	return after, nil
}

// finish removes the drain annotation (the node stays disabled) and ends the OpDrain.
func (c *DrainController) finish(ctx context.Context, name string) error {
	nodes := store.Typed[*v4.Node](c.store, v4.KindNode)
	for range 5 {
		n, err := nodes.Get(ctx, "", name)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			return err
		}
		if _, ok := n.Metadata.Annotations[v4.DrainAnnotation]; !ok {
			break
		}
		delete(n.Metadata.Annotations, v4.DrainAnnotation)
		err = nodes.Update(ctx, n, store.Raw{})
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("end the drain of node %s: %w", name, err)
		}
	}
	c.end(ctx, name)
	return nil
}

// end ends the node's OpDrain and forgets what its drain remembered, so a later drain
// of the node reports and retries afresh.
func (c *DrainController) end(ctx context.Context, name string) {
	if err := c.store.EndOperation(ctx, v4.KindNode, "", name, v4.OpDrain); err != nil {
		c.log.Warn("end drain operation", "node", name, "err", err)
	}
	prefix := drainID(name, "")
	c.mu.Lock()
	for k := range c.backoff {
		if strings.HasPrefix(k, prefix) {
			delete(c.backoff, k)
		}
	}
	c.mu.Unlock()
	c.recorder.mu.Lock()
	var ids []string
	for id := range c.reported {
		if strings.HasPrefix(id, prefix) {
			ids = append(ids, id)
		}
	}
	c.recorder.mu.Unlock()
	c.forget(ids...)
}

// drainID names something a node's drain remembers (an event sent, a back-off).
func drainID(node, id string) string { return "node/" + node + "/" + id }

// backoffUntil returns when the drain of node may try id again (zero: now); an expired
// back-off is dropped.
func (c *DrainController) backoffUntil(node, id string, now time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := drainID(node, id)
	until := c.backoff[k]
	if !until.IsZero() && now.After(until) {
		delete(c.backoff, k)
		return time.Time{}
	}
	return until
}

func (c *DrainController) setBackoff(node, id string, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.backoff[drainID(node, id)] = until
}

func (c *DrainController) nodeEvent(node, typ, reason, msg string) {
	c.record(v4.Event{Type: typ, Reason: reason, Kind: v4.KindNode, Name: node, Message: msg})
}

// nodeEventOnce records an event of the node unless the same message was recorded for id
// during this drain.
func (c *DrainController) nodeEventOnce(node, id, typ, reason, msg string) {
	c.recordOnce(drainID(node, id), msg, v4.Event{Type: typ, Reason: reason, Kind: v4.KindNode, Name: node, Message: msg})
}
