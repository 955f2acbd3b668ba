package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/scheduler/feed"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
)

// base is what the controllers that own task groups share: the store, the scheduler's
// feed, a logger, an event recorder, and the task group writes they all make (create from
// a placement, stop, delete).
type base struct {
	store  *store.Store
	feed   *feed.Feed
	caches *cache.Registry
	log    *slog.Logger
	*recorder
	guard   *specGuard
	started time.Time // the term's start: phases reached before were reported already
	// tgs is the controller's read of task groups from the shared cache (taskgroups.go),
	// which records its writes.
	tgs *taskGroupView
}

func newBase(st *store.Store, f *feed.Feed, opts Options, log *slog.Logger) base {
	return newBaseOf(st, f, opts, log, newRecorder(st, log))
}

// newBaseOf is newBase with the controller's recorder.
func newBaseOf(st *store.Store, f *feed.Feed, opts Options, log *slog.Logger, rec *recorder) base {
	return base{store: st, feed: f, caches: opts.Caches, log: log, recorder: rec, guard: newSpecGuard(rec), started: time.Now(),
		tgs: &taskGroupView{cacheView{cache: opts.Caches.For(v4.KindTaskGroup)}}}
}

// cache returns the process's cache of kind.
func (c *base) cache(kind v4.Kind) *cache.Cache { return c.caches.For(kind) }

// flatten lists the task groups of an owner grouped by index or by node.
func flatten[K comparable](groups map[K][]*v4.TaskGroup) []*v4.TaskGroup {
	var all []*v4.TaskGroup
	for _, tgs := range groups {
		all = append(all, tgs...)
	}
	return all
}

// newTaskGroup builds the task group of one placement of owner, running tmpl, bound to
// its node and wanted Running.
func newTaskGroup(owner v4.Object, kp *v4.KillPolicy, tmpl *v4.PodTemplate, req *scheduler.Request, p scheduler.Placement, now time.Time) *v4.TaskGroup {
	grace := 1
	if kp != nil && kp.GracePeriod > 1 {
		grace = kp.GracePeriod
	}
	m := owner.GetMeta()
	var annotations map[string]string
	if d, ok := ownerDeployment(m); ok {
		// Its instance is the deployment's (instance volumes, instanceEnds).
		annotations = map[string]string{v4.ControlledByAnnotation: "deployment/" + d}
	}
	return &v4.TaskGroup{
		TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindTaskGroup},
		Metadata: v4.ObjectMeta{Name: p.Name, Namespace: m.Namespace, Labels: req.Labels, Annotations: annotations},
		Spec: v4.TaskGroupSpec{
			Owner: v4.OwnerRef{Kind: owner.GetKind(), Name: m.Name}, Index: p.Index, Node: p.Node,
			Labels: req.Labels, Resources: p.Resources, Overhead: p.Overhead, Ports: p.Ports, GPUs: p.GPUs, Attributes: p.Attributes,
			Template: *tmpl, KillGracePeriod: grace, OwnerVersion: m.ResourceVersion,
			Desired: v4.DesiredRunning, Priority: int(req.Priority), Revocable: req.Revocable,
		},
		Status: v4.TaskGroupStatus{Phase: v4.StatusStaging, Updated: now},
	}
}

// create writes a placed task group; on failure the placement is taken back from the
// scheduler's snapshot.
func (c *base) create(ctx context.Context, tg *v4.TaskGroup) error {
	if err := c.store.Create(ctx, tg, store.Raw{}); err != nil {
		c.feed.With(func(s *scheduler.Snapshot) { s.RemoveTaskGroup(tg.Metadata.Namespace, tg.Metadata.Name) })
		return fmt.Errorf("create task group %s: %w", tg.Metadata.Name, err)
	}
	c.wrote(tg)
	return nil
}

// byRun orders runs of one instance oldest first: by restart count, then creation.
func byRun(a, b *v4.TaskGroup) int {
	if a.Spec.ReschedTimes != b.Spec.ReschedTimes {
		return a.Spec.ReschedTimes - b.Spec.ReschedTimes
	}
	if c := a.Metadata.CreationTimestamp.Compare(b.Metadata.CreationTimestamp); c != 0 {
		return c
	}
	return cmp.Compare(placedStamp(a.Metadata.Name), placedStamp(b.Metadata.Name)) // same second (move.go)
}

// stopRequestedAnnotation records when a task group was asked to stop.
const stopRequestedAnnotation = "berth.io/stop-requested"

// removeAll stops task groups that still run (a deliberate kill through the agent) and
// deletes those that ended, or that took too long to stop. It returns when to look again.
func (c *base) removeAll(ctx context.Context, tgs []*v4.TaskGroup) time.Duration {
	var next time.Duration
	for _, tg := range tgs {
		d, err := c.remove(ctx, tg)
		if err != nil {
			c.log.Warn("remove task group", "taskgroup", tg.Metadata.Name, "err", err)
			d = 2 * time.Second
		}
		if d > 0 && (next == 0 || d < next) {
			next = d
		}
	}
	return next
}

func (c *base) remove(ctx context.Context, tg *v4.TaskGroup) (time.Duration, error) {
	phase := tg.Status.Phase
	if v4.Terminal(phase) || phase == v4.StatusLost {
		if phase != v4.StatusLost { // a Lost one's agent is not listening
			c.markInstanceEnds(ctx, tg)
		}
		return 0, c.deleteTG(ctx, tg)
	}
	limit := time.Duration(max(tg.Spec.KillGracePeriod, 1))*time.Second + stopTimeout
	if tg.Spec.Desired != v4.DesiredStopped {
		return limit, c.markStopped(ctx, tg, c.instanceEnds(tg))
	}
	asked, _ := time.Parse(time.RFC3339, tg.Metadata.Annotations[stopRequestedAnnotation])
	if phase == v4.StatusStaging || time.Since(asked) > limit {
		return 0, c.deleteTG(ctx, tg) // never started, or its agent is not answering
	}
	return limit - time.Since(asked), nil
}

// createAll writes placed task groups in as few transactions as the store allows; those
// not written are taken back from the scheduler's snapshot. It returns how many were
// written (the first ones are not necessarily the written ones: created says which).
func (c *base) createAll(ctx context.Context, tgs []*v4.TaskGroup) ([]bool, error) {
	objs := make([]v4.Object, len(tgs))
	for i, tg := range tgs {
		objs[i] = tg
	}
	created, err := c.store.CreateAll(ctx, objs)
	for i, tg := range tgs {
		if created[i] {
			c.wrote(tg)
			continue
		}
		c.feed.With(func(s *scheduler.Snapshot) { s.RemoveTaskGroup(tg.Metadata.Namespace, tg.Metadata.Name) })
	}
	if err != nil {
		return created, fmt.Errorf("create task groups: %w", err)
	}
	return created, nil
}

// wrote records a task group write for the controller's reads (taskGroupView).
func (c *base) wrote(tg *v4.TaskGroup) { c.tgs.wrote(tg.Metadata.ResourceVersion) }

// deleteTG deletes a task group and drops it from the scheduler's snapshot at once, so the
// replacement placed next does not count it.
func (c *base) deleteTG(ctx context.Context, tg *v4.TaskGroup) error {
	if _, err := c.store.Delete(ctx, v4.KindTaskGroup, tg.Metadata.Namespace, tg.Metadata.Name, ""); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("delete task group %s: %w", tg.Metadata.Name, err)
	}
	c.feed.With(func(s *scheduler.Snapshot) { s.RemoveTaskGroup(tg.Metadata.Namespace, tg.Metadata.Name) })
	c.forget(tg.Metadata.Name, phaseKey(tg), "moved/"+tg.Metadata.Name, "movefailed/"+tg.Metadata.Name)
	return nil
}
