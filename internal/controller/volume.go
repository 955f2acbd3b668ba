package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
	"github.com/berthhq/berth/internal/volumes"
)

// volumeWorkers reconcile volumes side by side: a controller call may take minutes (a
// plugin creating a large volume), and it must not hold up the others.
const volumeWorkers = 4

// volKey names a volume object.
type volKey struct{ Namespace, Name string }

func (k volKey) String() string { return k.Namespace + "/" + k.Name }

func aboutVolume(k volKey) v4.Event {
	return v4.Event{Kind: v4.KindVolume, Namespace: k.Namespace, Name: k.Name}
}

// VolumeController drives volume objects (docs/volumes.md, The volume controller): it
// creates (or validates) each new volume through the agent of a node whose plugin offers
// the controller service, deletes those being deleted, and releases the claims of task
// groups that are gone. Its calls go through Options.Volumes; a failed pass backs off
// (worker.go), so a volume whose plugin is nowhere, or whose delete fails, is retried at
// longer and longer intervals, never in a spin.
type VolumeController struct {
	store *store.Store
	log   *slog.Logger
	*recorder
	guard *specGuard
	opts  Options
	queue *queue[volKey]
	calls volumes.VolumeController

	vols, nodes, tgs *cache.Cache

	mu sync.Mutex
	// controllers is, by node, the plugins whose controller the node offers healthy:
	// a node that gains one queues the volumes waiting for it.
	controllers map[string]map[string]bool
}

// NewVolumeController builds the controller; Run drives it.
func NewVolumeController(st *store.Store, opts Options) *VolumeController {
	opts = opts.withDefaults()
	log := opts.Logger.With("controller", "volume")
	rec := newRecorder(st, log)
	calls := opts.Volumes
	if calls == nil {
		calls = noVolumeCalls{}
	}
	return &VolumeController{store: st, log: log, recorder: rec, guard: newSpecGuard(rec), opts: opts, queue: newQueue[volKey](),
		calls: calls, vols: opts.Caches.For(v4.KindVolume), nodes: opts.Caches.For(v4.KindNode),
		tgs: opts.Caches.For(v4.KindTaskGroup), controllers: map[string]map[string]bool{}}
}

// noVolumeCalls is the calls of a server built without a way to reach agents.
type noVolumeCalls struct{}

func (noVolumeCalls) Call(context.Context, string, v4.CSIControllerRequest) (v4.CSIControllerReply, error) {
	return v4.CSIControllerReply{}, errors.New("this server cannot make CSI controller calls (no agent client)")
}

// Run drives the volumes until ctx ends.
func (c *VolumeController) Run(ctx context.Context) error {
	return loop{caches: []*cache.Cache{c.vols, c.nodes, c.tgs},
		start: func(context.Context, func(func())) error {
			objs, _, err := c.vols.List("", "")
			for _, o := range objs {
				c.enqueue(o)
			}
			return err
		},
		follow: []func(context.Context){
			follow(c.vols, c.log, c.enqueue),
			follow(c.nodes, c.log, c.nodeChanged),
			func(ctx context.Context) { watchCache(ctx, c.tgs, c.log, nil, c.taskGroupChanged) },
		},
		resync: c.enqueue, resyncFrom: []*cache.Cache{c.vols},
		work: func(ctx context.Context) {
			work(ctx, "volume", c.opts.Metrics, volumeWorkers, c.queue, c.log, c.recorder, aboutVolume, c.reconcile)
		}}.run(ctx)
}

func (c *VolumeController) enqueue(o v4.Object) {
	m := o.GetMeta()
	c.queue.Add(volKey{m.Namespace, m.Name})
}

// taskGroupChanged queues the volumes a deleted task group claimed, so their claims are
// released: a task group never changes node, and the resync finds the rest.
func (c *VolumeController) taskGroupChanged(ev store.Event) {
	tg, ok := ev.Object.(*v4.TaskGroup)
	if !ok || ev.Type != store.Deleted {
		return
	}
	for _, v := range tg.Spec.Template.Spec.Volumes {
		if v.CSI != nil {
			c.queue.Add(volKey{tg.Metadata.Namespace, v.CSI.Volume})
		}
	}
}

// nodeChanged queues the volumes still to be created (or deleted) of each plugin whose
// controller the node now offers and did not before: they need not wait for their
// back-off to end. Only a change queues them, so a node's repeated writes cost nothing.
func (c *VolumeController) nodeChanged(o v4.Object) {
	n, ok := o.(*v4.Node)
	if !ok {
		return
	}
	now := map[string]bool{}
	if n.Status.Phase == v4.NodeReady {
		for _, p := range n.Status.CSIPlugins {
			if p.Healthy && p.Controller {
				now[p.Name] = true
			}
		}
	}
	c.mu.Lock()
	before := c.controllers[n.Metadata.Name]
	c.controllers[n.Metadata.Name] = now
	c.mu.Unlock()
	for plugin := range now {
		if before[plugin] {
			continue
		}
		objs, _, _ := c.vols.List("", "") // index "" always answers
		for _, o := range objs {
			v := o.(*v4.CSIVolume)
			if v.Spec.Plugin == plugin && v.Status.Phase != v4.VolumeAvailable && v.Status.Phase != v4.VolumeError {
				c.enqueue(v)
			}
		}
	}
}

// reconcile moves one volume on from its phase: the store's version, not the cache's,
// as each step is a compare-and-swap on what it read.
func (c *VolumeController) reconcile(ctx context.Context, key volKey) (time.Duration, error) {
	vol, err := store.Typed[*v4.CSIVolume](c.store, v4.KindVolume).Get(ctx, key.Namespace, key.Name)
	if errors.Is(err, store.ErrNotFound) {
		c.guard.forget(v4.KindVolume, key.Namespace, key.Name)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if c.guard.check(vol) != "" {
		return 0, nil
	}
	switch vol.Status.Phase {
	case "", v4.VolumePending, v4.VolumeCreating:
		return 0, c.provision(ctx, vol)
	case v4.VolumeAvailable:
		return 0, c.collectClaims(ctx, vol)
	case v4.VolumeDeleting:
		return 0, c.deprovision(ctx, vol)
	}
	return 0, nil // Error: the user deletes it (or fixes the plugin and applies it again)
}

// listNodes lists the nodes from the shared cache.
func (c *VolumeController) listNodes() []*v4.Node {
	objs, _, _ := c.nodes.List("", "") // index "" always answers
	out := make([]*v4.Node, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*v4.Node))
	}
	return out
}

// setStatus writes what edit changes of vol's status, on the stored version of the same
// volume object; it returns the volume written.
func (c *VolumeController) setStatus(ctx context.Context, vol *v4.CSIVolume, edit func(*v4.VolumeStatus)) (*v4.CSIVolume, error) {
	return volumes.Update(ctx, c.store, vol.Metadata.Namespace, vol.Metadata.Name, func(cur *v4.CSIVolume) (bool, error) {
		if cur.Status.UID != vol.Status.UID || !cur.Metadata.CreationTimestamp.Equal(vol.Metadata.CreationTimestamp) {
			return false, fmt.Errorf("volume %s/%s was replaced meanwhile: %w", vol.Metadata.Namespace, vol.Metadata.Name, store.ErrConflict)
		}
		edit(&cur.Status)
		return true, nil
	})
}

// waiting records why vol cannot go on (its phase kept) and returns cause, so that the
// worker backs off before the next try.
func (c *VolumeController) waiting(ctx context.Context, vol *v4.CSIVolume, cause error) error {
	msg := cause.Error()
	if vol.Status.Message != msg {
		if _, err := c.setStatus(ctx, vol, func(s *v4.VolumeStatus) {
			s.Message = msg
			if s.Phase == "" {
				s.Phase = v4.VolumePending
			}
		}); err != nil {
			return errors.Join(cause, err)
		}
	}
	return cause
}

// failed puts vol in phase Error with msg, as an event too.
func (c *VolumeController) failed(ctx context.Context, vol *v4.CSIVolume, msg string) error {
	_, err := c.setStatus(ctx, vol, func(s *v4.VolumeStatus) {
		if s.Phase != v4.VolumeDeleting {
			s.Phase = v4.VolumeError
		}
		s.Message = msg
	})
	c.record(v4.Event{Type: v4.EventWarning, Reason: "VolumeFailed", Kind: v4.KindVolume,
		Namespace: vol.Metadata.Namespace, Name: vol.Metadata.Name, Message: msg})
	return err
}
