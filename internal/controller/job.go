package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/scheduler/feed"
	"github.com/berthhq/berth/internal/store"
)

// JobController runs jobs to completion (docs/jobs.md): it places a task group for each
// index that has neither succeeded nor a run in progress, up to the job's parallelism,
// counts the runs that end, replaces failed ones until backoffLimit, applies the pod
// failure policy, the deadline, suspend and the TTL after the job finished. Its state is
// the job's task groups: a run that ended is kept (its exit code and times are the
// record) until the job goes, so a new leader counts exactly what the old one did. A
// job's task groups are never restarted in place: the application controller and the
// others leave task groups owned by a job alone.
type JobController struct {
	base
	opts  Options
	queue *queue[scheduler.AppKey]
	jobs  *cacheView
	// retryBase is the delay before the first retry of a failed run; it doubles with
	// each failure since the job's last success, up to jobRetryCap.
	retryBase time.Duration
}

// Retry delays of a job's failed runs (Kubernetes starts at 10 s; berth's jobs are
// often short, so it starts lower).
const (
	jobRetryBase = time.Second
	jobRetryCap  = 5 * time.Minute
)

// NewJobController builds the controller; Run drives it.
func NewJobController(st *store.Store, f *feed.Feed, opts Options) *JobController {
	opts = opts.withDefaults()
	b := newBase(st, f, opts, opts.Logger.With("controller", "job"))
	c := &JobController{base: b, opts: opts, queue: newQueue[scheduler.AppKey](),
		jobs: &cacheView{cache: b.cache(v4.KindJob)}, retryBase: jobRetryBase}
	c.queue.prio = c.jobs.priorityOf // higher priorities are reconciled, and placed, first
	return c
}

// Run watches jobs and task groups and reconciles until ctx ends.
func (c *JobController) Run(ctx context.Context) error {
	l := c.ownerLoop(v4.KindJob, "job", c.opts.Metrics, c.queue, c.jobs, c.enqueueObject, c.reconcile)
	l.start = c.restoreNominations // before any placement, as the application controller's
	return l.run(ctx)
}

func (c *JobController) enqueueObject(o v4.Object) {
	m := o.GetMeta()
	c.queue.Add(scheduler.AppKey{Kind: v4.KindJob, Namespace: m.Namespace, Name: m.Name})
}

// jobOf returns the job of key from the cache (a copy whose fields may be set), or from
// etcd when the cache does not hold it yet; nil when it is gone.
func (c *JobController) jobOf(ctx context.Context, key scheduler.AppKey) (*v4.Job, error) {
	return objectOf[v4.Job](ctx, c.store, c.jobs, key)
}

// reconcile brings one job a step on and returns when to look again.
func (c *JobController) reconcile(ctx context.Context, key scheduler.AppKey) (time.Duration, error) {
	job, err := c.jobOf(ctx, key)
	if err != nil {
		return 0, err
	}
	tgs, err := c.tgs.ofOwner(ctx, key.Namespace, key.Kind, key.Name)
	if err != nil {
		return 0, err
	}
	if job == nil { // deleted (by a user or its TTL): stop and remove every run
		c.guard.forget(key.Kind, key.Namespace, key.Name)
		c.feed.With(func(s *scheduler.Snapshot) { s.ClearNominations(key) })
		return c.removeAll(ctx, tgs), nil
	}
	if msg := c.guard.check(job); msg != "" { // what runs stays; nothing is placed
		st := job.Status
		st.Message = msg
		return 0, c.updateJobStatus(ctx, key, st)
	}
	p := newJobPass(c, key, job, tgs)
	if err := p.run(ctx); err != nil {
		return 0, err
	}
	p.st.Nominated = p.nominated
	c.clearStaleHolds(key, p.nominated)
	if err := c.updateJobStatus(ctx, key, p.st); err != nil {
		return 0, err
	}
	if p.expired {
		return c.expire(ctx, key, job)
	}
	return p.next, nil
}

// expire deletes a finished job whose ttlSecondsAfterFinished passed; its deletion
// queues it again, and that pass removes its task groups.
func (c *JobController) expire(ctx context.Context, key scheduler.AppKey, job *v4.Job) (time.Duration, error) {
	if _, err := c.store.Delete(ctx, v4.KindJob, key.Namespace, key.Name, ""); err != nil && !errors.Is(err, store.ErrNotFound) {
		return 0, fmt.Errorf("delete expired job %s: %w", key, err)
	}
	c.event(key, v4.EventNormal, "Expired", fmt.Sprintf("job %s/%s deleted %ds after it finished (ttlSecondsAfterFinished)",
		key.Namespace, key.Name, *job.Spec.TTLSecondsAfterFinished))
	return 0, nil
}

// updateJobStatus writes the job's status when it changed, retrying on conflicts with
// users' writes.
func (c *JobController) updateJobStatus(ctx context.Context, key scheduler.AppKey, st v4.JobStatus) error {
	return writeStored(ctx, c.store, key, func(job *v4.Job) error {
		if sameJSON(job.Status, st) {
			return nil
		}
		if job.Status.Phase != st.Phase {
			c.event(key, v4.EventNormal, "Status", fmt.Sprintf("job %s/%s is %s (%d active, %d succeeded, %d failed)",
				key.Namespace, key.Name, st.Phase, st.Active, st.Succeeded, st.Failed))
			c.jobEnded(key, st)
		}
		job.Status = st
		err := c.store.Update(ctx, job, store.Raw{})
		if err == nil {
			c.opts.Metrics.statusWritten("job")
			c.jobs.wrote(job.Metadata.ResourceVersion)
		}
		return err
	})
}

// jobEnded records the end of a job for notify callbacks (job.succeeded, job.failed)
// and the metrics.
func (c *JobController) jobEnded(key scheduler.AppKey, st v4.JobStatus) {
	switch st.Phase {
	case v4.JobComplete:
		c.event(key, v4.EventNormal, "JobSucceeded", fmt.Sprintf("job %s/%s succeeded (%d succeeded)", key.Namespace, key.Name, st.Succeeded))
	case v4.JobFailed:
		msg := fmt.Sprintf("job %s/%s failed", key.Namespace, key.Name)
		if cond := st.Condition(v4.JobFailed); cond != nil {
			msg += ": " + cond.Message
		}
		c.event(key, v4.EventWarning, "JobFailed", msg)
	}
}

// sameJSON compares two statuses as they are stored: times read back from etcd and
// times just taken differ in memory (location, monotonic clock) and not in JSON.
func sameJSON[T any](a, b T) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && slices.Equal(x, y)
}
