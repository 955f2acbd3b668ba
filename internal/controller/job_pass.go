package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
)

// jobPass is one reconcile of one job.
type jobPass struct {
	c   *JobController
	key scheduler.AppKey
	job *v4.Job
	set v4.JobSettings
	now time.Time
	tgs []*v4.TaskGroup

	st   v4.JobStatus
	next time.Duration
	// expired is set when the job finished more than its TTL ago: it is to be deleted.
	expired bool

	succeeded map[int]bool
	active    map[int][]*v4.TaskGroup // runs not ended and not being stopped, by index
	stopping  []*v4.TaskGroup
	failed    int
	// lastFailure is when the newest counted failure of each index ended; failedAt when
	// each counted failure did, and lastSuccess when the newest success did.
	lastFailure map[int]time.Time
	failedAt    []time.Time
	lastSuccess time.Time
	attempts    map[int]int // the next run's attempt number of each index
	records     []v4.JobRunRecord
	failJob     string // why the pod failure policy fails the job
	// nominated are the runs waiting for their preemption's victims (job_preempt.go).
	nominated []v4.Nomination
	// gate is the room left in the job's namespace quota (quota_gate.go); its fence goes
	// with the runs' writes. nil: no resource quota.
	gate *quotaGate
}

func newJobPass(c *JobController, key scheduler.AppKey, job *v4.Job, tgs []*v4.TaskGroup) *jobPass {
	st := job.Status
	st.Message = ""
	return &jobPass{c: c, key: key, job: job, set: job.Spec.Settings(), now: time.Now().UTC(), tgs: tgs, st: st,
		succeeded: map[int]bool{}, active: map[int][]*v4.TaskGroup{}, lastFailure: map[int]time.Time{}, attempts: map[int]int{}}
}

func (p *jobPass) wake(d time.Duration) {
	if d > 0 && (p.next == 0 || d < p.next) {
		p.next = d
	}
}

// run counts the job's runs and takes the one decision the job's state calls for.
func (p *jobPass) run(ctx context.Context) error {
	p.collect(ctx)
	suspended := p.job.Spec.Suspend
	switch {
	case p.st.Done(): // finished in an earlier pass: what still runs stops, the TTL runs
		p.stopAll(ctx)
		p.ttl()
	case p.failJob != "":
		p.fail(ctx, v4.ReasonFailurePolicy, p.failJob)
	case p.failed > p.set.BackoffLimit:
		p.fail(ctx, v4.ReasonBackoffLimit, fmt.Sprintf("%d failed runs, more than backoffLimit %d", p.failed, p.set.BackoffLimit))
	case len(p.succeeded) >= p.set.Completions:
		p.st.Conditions = setCondition(p.st.Conditions, v4.JobComplete, true, v4.ReasonCompletionsReach,
			fmt.Sprintf("%d of %d completions succeeded", len(p.succeeded), p.set.Completions), p.now)
		p.st.CompletionTime = p.now
		p.stopAll(ctx)
		p.ttl()
	case suspended:
		p.suspend(ctx)
	default:
		p.resume()
		if p.deadlinePassed() {
			p.fail(ctx, v4.ReasonDeadline, fmt.Sprintf("the job ran longer than activeDeadlineSeconds %d", p.job.Spec.ActiveDeadlineSeconds))
			break
		}
		if err := p.start(ctx); err != nil {
			return err
		}
	}
	p.summarize()
	return nil
}

// collect sorts the runs: active, being stopped, succeeded, failed (counted), ignored
// and stopped ones (removed once recorded).
func (p *jobPass) collect(ctx context.Context) {
	var drop []*v4.TaskGroup
	old := map[string]bool{}
	for _, r := range p.st.Finished {
		old[r.TaskGroup] = r.Result == runIgnored
	}
	for _, tg := range p.tgs {
		idx := tg.Spec.Index
		p.c.observe(tg, phaseOf(tg))
		p.attempts[idx] = max(p.attempts[idx], tg.Spec.ReschedTimes+1)
		if activeRun(tg) {
			if tg.Spec.Desired == v4.DesiredStopped {
				p.stopping = append(p.stopping, tg)
			} else {
				p.active[idx] = append(p.active[idx], tg)
			}
			continue
		}
		o := outcome(tg, p.job.Spec.PodFailurePolicy)
		rec := record(tg, o)
		p.records = keepLatest(append(p.records, rec))
		switch o.result {
		case runSucceeded:
			p.succeeded[idx] = true
			if rec.FinishedAt.After(p.lastSuccess) {
				p.lastSuccess = rec.FinishedAt
			}
		case runFailed:
			p.failed++
			p.failedAt = append(p.failedAt, rec.FinishedAt)
			if o.failJob && p.failJob == "" {
				p.failJob = o.why
			}
			if rec.FinishedAt.After(p.lastFailure[idx]) {
				p.lastFailure[idx] = rec.FinishedAt
			}
		case runIgnored:
			if !old[tg.Metadata.Name] { // counted once, though the cache may show it again
				p.st.Ignored++
			}
			drop = append(drop, tg)
		default: // stopped by berth
			drop = append(drop, tg)
		}
	}
	for idx, runs := range p.active {
		// A second run of an index that succeeded, or a run of an index past a lowered
		// spec.completions, is stopped.
		if p.succeeded[idx] || idx >= p.set.Completions {
			p.stop(ctx, runs)
			delete(p.active, idx)
		}
	}
	for idx := range p.succeeded {
		if idx >= p.set.Completions {
			delete(p.succeeded, idx)
		}
	}
	p.wake(p.c.removeAll(ctx, drop))
	p.wake(p.c.removeAll(ctx, p.stopping)) // their stop timeouts
}

func phaseOf(tg *v4.TaskGroup) string {
	if tg.Status.Phase == "" {
		return v4.StatusStaging
	}
	return tg.Status.Phase
}

// stop asks runs to stop; they count as stopping from now on.
func (p *jobPass) stop(ctx context.Context, runs []*v4.TaskGroup) {
	p.stopping = append(p.stopping, runs...)
	p.wake(p.c.removeAll(ctx, runs))
}

// stopAll stops every active run.
func (p *jobPass) stopAll(ctx context.Context) {
	for _, idx := range slices.Sorted(maps.Keys(p.active)) {
		p.stop(ctx, p.active[idx])
	}
	clear(p.active)
}

// fail marks the job Failed and stops its runs.
func (p *jobPass) fail(ctx context.Context, reason, msg string) {
	p.st.Conditions = setCondition(p.st.Conditions, v4.JobFailed, true, reason, msg, p.now)
	p.c.event(p.key, v4.EventWarning, reason, fmt.Sprintf("job %s/%s failed: %s", p.key.Namespace, p.key.Name, msg))
	p.stopAll(ctx)
	p.ttl()
}

// ttl sets expired once a finished job's ttlSecondsAfterFinished passed, else wakes then.
func (p *jobPass) ttl() {
	ttl := p.job.Spec.TTLSecondsAfterFinished
	if ttl == nil {
		return
	}
	var at time.Time
	for _, typ := range []string{v4.JobComplete, v4.JobFailed} {
		if c := p.st.Condition(typ); c != nil {
			at = c.Time.Add(time.Duration(*ttl) * time.Second)
		}
	}
	if at.IsZero() {
		return
	}
	if d := at.Sub(p.now); d > 0 {
		p.wake(d)
		return
	}
	p.expired = true
}

// suspend stops the active runs and starts none; the deadline waits with the job.
func (p *jobPass) suspend(ctx context.Context) {
	p.stopAll(ctx)
	p.st.Conditions = setCondition(p.st.Conditions, v4.JobSuspended, true, "JobSuspended", "spec.suspend is set", p.now)
}

// resume starts the job's clock: at its first pass, and again when it was suspended
// (Kubernetes' startTime is reset on resume, and the deadline counts from it).
func (p *jobPass) resume() {
	if p.st.StartTime.IsZero() || p.st.Condition(v4.JobSuspended) != nil {
		p.st.StartTime = p.now
	}
	p.st.Conditions = setCondition(p.st.Conditions, v4.JobSuspended, false, "JobResumed", "spec.suspend is unset", p.now)
}

// deadlinePassed reports whether the job ran past activeDeadlineSeconds, else wakes
// then.
func (p *jobPass) deadlinePassed() bool {
	secs := p.job.Spec.ActiveDeadlineSeconds
	if secs <= 0 {
		return false
	}
	d := p.st.StartTime.Add(time.Duration(secs) * time.Second).Sub(p.now)
	if d <= 0 {
		return true
	}
	p.wake(d)
	return false
}

// start places runs for the lowest indexes that have neither succeeded nor a run, up to
// parallelism; an index whose last run failed waits for its retry delay.
func (p *jobPass) start(ctx context.Context) error {
	budget := p.set.Parallelism - len(p.stopping)
	for _, runs := range p.active {
		budget -= len(runs)
	}
	streak := p.failureStreak()
	var idxs []int
	for idx := 0; idx < p.set.Completions && len(idxs) < budget; idx++ {
		if p.succeeded[idx] || len(p.active[idx]) > 0 {
			continue
		}
		if t, ok := p.lastFailure[idx]; ok {
			due := t.Add(retryDelay(p.c.retryBase, streak))
			if d := due.Sub(p.now); d > 0 {
				p.wake(d)
				p.note(fmt.Sprintf("index %d is retried at %s (%d failures in a row)", idx, due.Format(time.TimeOnly), streak))
				continue
			}
		}
		idxs = append(idxs, idx)
	}
	if len(idxs) == 0 {
		return nil
	}
	if idxs = p.runsWithinQuota(ctx, idxs); len(idxs) == 0 { // quota_gate.go
		return nil
	}
	return p.place(ctx, idxs)
}

// failureStreak counts the failures since the last success: the retry delay doubles
// with them and starts over once a run succeeds, as Kubernetes' backoff does, so that a
// large job whose runs fail now and then is not slowed down for good.
func (p *jobPass) failureStreak() int {
	n := 0
	for _, t := range p.failedAt {
		if t.After(p.lastSuccess) {
			n++
		}
	}
	return n
}

func (p *jobPass) note(msg string) {
	if p.st.Message == "" {
		p.st.Message = msg
	}
}

// place runs the scheduler for the indexes and writes the task groups of what it
// placed; what fits nowhere is tried again later, with the reason in the status.
func (p *jobPass) place(ctx context.Context, idxs []int) error {
	idxs, err := p.placeNominated(ctx, idxs) // job_preempt.go
	if err != nil || len(idxs) == 0 {
		return err
	}
	req, err := scheduler.RequestFor(p.job, idxs)
	if err != nil {
		p.note(err.Error())
		return nil
	}
	var res scheduler.Result
	opts := scheduler.Options{Strategy: p.c.opts.Placement, Cluster: p.c.opts.Cluster}
	p.c.feed.With(func(s *scheduler.Snapshot) { res = p.c.opts.Metrics.place(s, req, opts) })
	if err := p.createRuns(ctx, req, res); err != nil {
		return err
	}
	if err := p.preempt(ctx, req, res.Unplaced); err != nil {
		return err
	}
	if len(res.Unplaced) > 0 {
		msg := fmt.Sprintf("%d run(s) cannot be placed: %s", len(res.Unplaced), res.Reason)
		p.note(msg)
		p.c.eventOnce(p.key.String(), msg, p.key, v4.EventWarning, "FailedScheduling", msg)
		p.wake(unplacedRetry)
	} else {
		p.c.forget(p.key.String())
	}
	return nil
}

// createRuns writes the task groups of the runs res placed.
func (p *jobPass) createRuns(ctx context.Context, req *scheduler.Request, res scheduler.Result) error {
	tgs := make([]*v4.TaskGroup, len(res.Placements))
	for i, pl := range res.Placements {
		tg := newTaskGroup(p.job, p.job.KillPolicy, &p.job.Spec.Template, req, pl, p.now)
		tg.Spec.ReschedTimes = p.attempts[pl.Index]
		if p.set.Indexed {
			idx := pl.Index
			tg.Spec.JobIndex = &idx
		}
		tgs[i] = tg
	}
	var placed []scheduler.Placement
	if len(tgs) > 0 {
		created, err := p.c.createAll(p.gate.fenced(ctx), tgs)
		for i, pl := range res.Placements {
			if created[i] {
				placed = append(placed, pl)
				p.active[pl.Index] = append(p.active[pl.Index], tgs[i])
			}
		}
		if len(placed) > 0 {
			p.c.event(p.key, v4.EventNormal, "Scheduled", scheduledMessage(placed))
		}
		if errors.Is(err, store.ErrQuotaFence) { // the runs not written are placed after a new count
			p.wake(quotaRecount)
			return nil
		}
		return err
	}
	return nil
}

// summarize fills the counts, the completed indexes, the records and the phase.
func (p *jobPass) summarize() {
	st := &p.st
	st.Active = 0
	for _, runs := range p.active {
		st.Active += len(runs)
	}
	st.Succeeded, st.Failed = len(p.succeeded), p.failed
	st.CompletedIndexes = ""
	if p.set.Indexed {
		st.CompletedIndexes = v4.IndexRanges(slices.Sorted(maps.Keys(p.succeeded)))
	}
	st.Finished = mergeRecords(st.Finished, p.records)
	switch {
	case st.Condition(v4.JobComplete) != nil:
		st.Phase = v4.JobComplete
	case st.Condition(v4.JobFailed) != nil:
		st.Phase = v4.JobFailed
	case p.job.Spec.Suspend:
		st.Phase = v4.JobSuspended
	case st.Active > 0:
		st.Phase = v4.JobRunning
	default:
		st.Phase = v4.JobPending
	}
}
