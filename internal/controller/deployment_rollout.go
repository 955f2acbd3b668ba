package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
)

// nameTakenRetry is how often a deployment whose application name is taken looks again.
const nameTakenRetry = 10 * time.Second

// rollout is one reconcile of one deployment.
type rollout struct {
	c        *DeploymentController
	key      scheduler.AppKey
	d        *v4.Deployment
	st       v4.DeploymentStatus // the status being built from the stored one
	children []*child
	now      time.Time
}

func (r *rollout) ru() v4.RollingUpdate {
	ru := v4.RollingUpdate{MaxUnavailable: 1, MaxSurge: 1, RollingOrder: v4.RollingCreateFirst}
	if r.d.Spec.Strategy.RollingUpdate != nil {
		ru = *r.d.Spec.Strategy.RollingUpdate
	}
	if r.d.Spec.Strategy.Type == v4.StrategyRecreate {
		// One step: every old instance stops, then every new one starts.
		ru.RollingOrder, ru.MaxUnavailable = v4.RollingDeleteFirst, max(r.d.Spec.Instance, 1)
	}
	return ru
}

// run finds the current revision (creating it for a new template), takes one rollout
// step, writes the status, then the applications' counts. The status goes first: if the
// leader dies in between, the next one finds the step recorded and the counts unchanged,
// and takes the same step again.
func (r *rollout) run(ctx context.Context) (time.Duration, error) {
	hash := v4.TemplateHash(r.d.Spec.Template)
	cur, old := r.splitChildren(hash)
	wasRolling := r.rolling()
	if cur == nil && len(old) > 0 && r.st.Paused {
		r.st.Phase = v4.DeploymentUpdatePaused
		r.st.Message = "paused: the new template is not rolled out until the rollout is resumed"
		return 0, r.c.writeStatus(ctx, r.d, r.st)
	}
	create := cur == nil
	if create {
		cur = r.newRevision(hash, old)
	} else {
		r.st.Revision = cur.revision
		r.remember(cur, "adopted")
	}
	in := stepInput{instances: r.d.Spec.Instance, ru: r.ru(), current: cur.state(), lastStep: r.st.LastStep, now: r.now}
	for _, o := range old {
		in.old = append(in.old, o.state())
	}
	ph := rolloutPhase{suspended: r.st.Phase == v4.DeploymentUpdateSuspend && len(old) > 0 && !create,
		hasOld: len(old) > 0, wasRolling: wasRolling, revision: cur.revision}
	if len(old) > 0 && !create {
		ph.failure = cur.failure(r.st.LastStep)
	}
	var p stepPlan
	if ph.hasOld && (ph.suspended || r.st.Paused || ph.failure != "") {
		// Held: every child keeps what it wants now.
		p = stepPlan{current: in.current.desired}
		for _, o := range in.old {
			p.old = append(p.old, o.desired)
		}
	} else {
		p = planStep(in)
	}
	r.counts(in, p)
	ph.oldLeft = slices.ContainsFunc(p.old, func(n int) bool { return n > 0 })
	r.setPhase(ph, p)
	if p.stepped {
		r.st.LastStep = r.now
		r.st.Paused = r.st.Paused || p.pause
	}
	// The operation goes before the status says so: a client that sees Running may scale
	// at once, and one that sees Updating must find the rollout's lock.
	r.operations(ctx, ph.oldLeft)
	if err := r.c.writeStatus(ctx, r.d, r.st); err != nil {
		return 0, err
	}
	changes := describeChanges(cur, old, p, create)
	if err := r.apply(ctx, cur, old, p, create); errors.Is(err, store.ErrAlreadyExists) {
		// The name is taken by an application that is not this deployment's.
		r.st.Message = fmt.Sprintf("cannot create %s: an application or process of that name exists and is not this deployment's; delete or rename it", cur.name())
		r.c.recordOnce("exists/"+r.key.String(), r.st.Message, r.c.eventFor(r.key, v4.EventWarning, "FailedCreate", r.st.Message))
		return nameTakenRetry, r.c.writeStatus(ctx, r.d, r.st)
	} else if err != nil {
		return 0, err
	}
	r.events(wasRolling, create, len(old) > 0, cur, old, p, changes)
	return p.wait, nil
}

// splitChildren finds the current child, the newest whose template hash is hash (nil
// when none is), and the old ones, every other.
func (r *rollout) splitChildren(hash string) (cur *child, old []*child) {
	for _, ch := range r.children {
		if ch.hash == hash && (cur == nil || ch.revision > cur.revision) {
			if cur != nil {
				old = append(old, cur)
			}
			cur = ch
			continue
		}
		old = append(old, ch)
	}
	return cur, old
}

// rolloutPhase is what a pass knows when it sets the deployment's phase.
type rolloutPhase struct {
	suspended  bool   // suspended before this pass, with old children left
	hasOld     bool   // old children exist
	wasRolling bool   // the stored status showed a rollout under way
	oldLeft    bool   // old children still want instances after this step
	failure    string // why the current revision failed, "" when it did not
	revision   int    // the current child's revision
}

// setPhase sets the status's phase and message after the step p.
func (r *rollout) setPhase(ph rolloutPhase, p stepPlan) {
	switch {
	case ph.suspended:
	case ph.hasOld && ph.failure != "":
		r.suspend(ph.failure)
	case ph.hasOld && r.st.Paused:
		r.st.Phase, r.st.Message = v4.DeploymentUpdatePaused, "paused by a user; resume with `berth rollout resume`"
	case p.expired:
		r.suspend(p.blocked)
	case ph.oldLeft || ph.wasRolling && r.st.CurrentAvailable < r.d.Spec.Instance:
		r.st.Phase = v4.DeploymentUpdating
		r.st.Message = cmpStr(p.blocked, fmt.Sprintf("rolling to revision %d: %d of %d instances updated, %d available", ph.revision, r.st.Current, r.st.Instances, r.st.Available))
	case r.d.Spec.Instance == 0: // scaled to zero: the revisions stay, nothing runs
		r.st.Phase, r.st.Message = v4.DeploymentStopped, ""
		if n := r.instancesLeft(); n > 0 {
			r.st.Phase, r.st.Message = v4.DeploymentStopping, fmt.Sprintf("scaled to 0: %d instances stopping", n)
		}
	case r.st.CurrentAvailable >= r.d.Spec.Instance:
		r.st.Phase, r.st.Message = v4.DeploymentRunning, ""
		if r.st.Stopped > 0 {
			r.st.Message = v4.StoppedMessage(r.d.Spec.StoppedInstances, r.d.Spec.Instance)
		}
	default:
		r.st.Phase = v4.DeploymentDeploying
		r.st.Message = fmt.Sprintf("%d of %d instances available", r.st.CurrentAvailable, r.d.Spec.Instance)
	}
}

// instancesLeft counts the task groups the deployment's applications still have.
func (r *rollout) instancesLeft() int {
	n := 0
	for _, ch := range r.children {
		for _, tgs := range ch.byIndex {
			n += len(tgs)
		}
	}
	return n
}

// rolling reports whether the stored status shows a rollout under way.
func (r *rollout) rolling() bool {
	switch r.st.Phase {
	case v4.DeploymentUpdating, v4.DeploymentUpdatePaused, v4.DeploymentUpdateSuspend:
		return true
	}
	return false
}

func (r *rollout) suspend(why string) {
	r.st.Phase = v4.DeploymentUpdateSuspend
	r.st.Message = "suspended: " + why + "; resume with `berth rollout resume` or go back with `berth rollout undo`"
}

// counts fills the status counts from what the plan leaves wanted.
func (r *rollout) counts(in stepInput, p stepPlan) {
	r.st.Instances = r.d.Spec.Instance
	r.st.Stopped = len(v4.StoppedBelow(r.d.Spec.StoppedInstances, r.d.Spec.Instance))
	r.st.Current = p.current
	r.st.CurrentAvailable = min(in.current.availableCount(), p.current)
	r.st.Available = in.current.availableCount()
	r.st.Old = 0
	for i, o := range in.old {
		r.st.Old += p.old[i]
		r.st.Available += o.availableCount()
	}
}

// newRevision records a revision for the template in the history and returns its (not
// yet created) application. A revision recorded whose application was never created (the
// leader died in between) is reused; a template equal to an older revision's (an undo)
// takes a new number and the old entry goes.
func (r *rollout) newRevision(hash string, old []*child) *child {
	rev, cause := 0, "template changed"
	if e := r.st.RevisionOf(r.st.Revision); e != nil && e.Hash == hash {
		rev = e.Revision
	} else {
		for _, h := range r.st.History {
			rev = max(rev, h.Revision)
		}
		for _, o := range old {
			rev = max(rev, o.revision)
		}
		rev++
		if len(r.st.History) == 0 && len(old) == 0 {
			cause = "created"
		}
		if i := slices.IndexFunc(r.st.History, func(h v4.DeploymentRevision) bool { return h.Hash == hash }); i >= 0 {
			cause = fmt.Sprintf("rollback to revision %d", r.st.History[i].Revision)
			r.st.History = slices.Delete(slices.Clone(r.st.History), i, i+1)
		}
		r.st.History = append(slices.Clone(r.st.History), v4.DeploymentRevision{Revision: rev, Hash: hash, Created: r.now, Cause: cause, Template: *r.d.Spec.Template})
		if n := len(r.st.History); n > v4.MaxDeploymentHistory {
			r.st.History = r.st.History[n-v4.MaxDeploymentHistory:]
		}
		r.st.LastStep = r.now // the rollout starts now: the first step's deadline counts from here
		if r.st.Phase == v4.DeploymentUpdateSuspend {
			r.st.Phase = v4.DeploymentUpdating // a new template replaces the suspended rollout
		}
	}
	r.st.Revision = rev
	obj := newChild(r.d, rev, hash, 0)
	return &child{obj: obj, w: workload(obj), revision: rev, hash: hash, byIndex: map[int][]*v4.TaskGroup{}}
}

// remember adds a history entry for a revision that has an application but none (a
// status lost or written by an older berth).
func (r *rollout) remember(ch *child, cause string) {
	if r.st.RevisionOf(ch.revision) != nil {
		return
	}
	r.st.History = append(slices.Clone(r.st.History), v4.DeploymentRevision{Revision: ch.revision, Hash: ch.hash,
		Created: ch.w.Metadata.CreationTimestamp, Cause: cause, Template: ch.w.Spec.Template})
	slices.SortFunc(r.st.History, func(a, b v4.DeploymentRevision) int { return a.Revision - b.Revision })
}

// apply writes the plan's counts: the new revision's application, then the old ones
// (deleted at 0, which stops their remaining instances).
func (r *rollout) apply(ctx context.Context, cur *child, old []*child, p stepPlan, create bool) error {
	if create {
		cur.w.Spec.Instance, cur.w.Spec.StoppedInstances = p.current, stoppedOf(r.d, p.current)
		if err := r.c.store.Create(ctx, cur.obj, store.Raw{}); err != nil {
			return fmt.Errorf("create %s %s/%s: %w", cur.obj.GetKind(), r.key.Namespace, cur.name(), err)
		}
		r.c.wroteChild(cur)
	} else if err := r.c.setInstances(ctx, r.d, cur, p.current); err != nil {
		return err
	}
	for i, o := range old {
		var err error
		if p.old[i] == 0 {
			err = r.c.deleteChild(ctx, o)
		} else {
			err = r.c.setInstances(ctx, r.d, o, p.old[i])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// describeChanges lists the instance counts the plan changes ("revision 3 to 2").
func describeChanges(cur *child, old []*child, p stepPlan, create bool) []string {
	var changes []string
	if cur.w.Spec.Instance != p.current || create {
		changes = append(changes, fmt.Sprintf("revision %d to %d", cur.revision, p.current))
	}
	for i, o := range old {
		if o.w.Spec.Instance != p.old[i] {
			changes = append(changes, fmt.Sprintf("revision %d to %d", o.revision, p.old[i]))
		}
	}
	return changes
}

// events records what the pass did.
func (r *rollout) events(wasRolling, create, hadOld bool, cur *child, old []*child, p stepPlan, changes []string) {
	ev := func(typ, reason, msg string) { r.c.record(r.c.eventFor(r.key, typ, reason, msg)) }
	if create && hadOld {
		var revs []string
		for _, o := range old {
			revs = append(revs, fmt.Sprint(o.revision))
		}
		ev(v4.EventNormal, "RolloutStarted", fmt.Sprintf("rolling out revision %d (%s) over revision %s",
			cur.revision, r.st.RevisionOf(cur.revision).Cause, strings.Join(revs, ", ")))
	}
	if len(changes) > 0 && hadOld {
		ev(v4.EventNormal, "Scaled", "scaled "+strings.Join(changes, ", "))
	}
	if p.pause {
		ev(v4.EventNormal, "RolloutPaused", "rollingManually: paused after a step; resume with `berth rollout resume`")
	}
	key := "suspend/" + r.key.String()
	if r.st.Phase == v4.DeploymentUpdateSuspend {
		r.c.recordOnce(key, fmt.Sprint(r.st.Revision, r.st.LastStep), r.c.eventFor(r.key, v4.EventWarning, "RolloutSuspended", r.st.Message))
	} else {
		r.c.forget(key)
	}
	if wasRolling && r.st.Phase == v4.DeploymentRunning {
		ev(v4.EventNormal, "RolloutComplete", fmt.Sprintf("all %d instances run revision %d", r.st.Instances, r.st.Revision))
	}
}

// operations keeps the deployment's rollout operation while old revisions remain (so a
// scale gets 423) and ends the rollout, undo and scale operations once every instance of
// the current revision is available.
func (r *rollout) operations(ctx context.Context, oldLeft bool) {
	if oldLeft {
		op, err := r.c.store.Operation(ctx, v4.KindDeployment, r.key.Namespace, r.key.Name)
		if err != nil {
			r.c.log.Warn("read operation", "deployment", r.key.String(), "err", err)
			return
		}
		if op == nil || op.Type == v4.OpScale {
			begin := v4.Operation{Type: v4.OpRollout, Kind: v4.KindDeployment, Name: r.key.Namespace + "/" + r.key.Name,
				Message: fmt.Sprintf("rollout to revision %d", r.st.Revision)}
			if err := r.c.store.BeginOperation(ctx, r.key.Namespace, r.key.Name, begin, v4.OpScale); err != nil {
				r.c.log.Warn("begin rollout operation", "deployment", r.key.String(), "err", err)
			}
		}
		return
	}
	// At 0 the scale ends when the instances are gone, as an application's does.
	stopping := r.d.Spec.Instance == 0 && r.st.Phase != v4.DeploymentStopped
	if r.st.CurrentAvailable >= r.d.Spec.Instance && r.st.Current == r.d.Spec.Instance && !stopping {
		for _, op := range []string{v4.OpRollout, v4.OpUndo, v4.OpScale} {
			r.c.endOperation(ctx, r.key, op)
		}
	}
}

func cmpStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
