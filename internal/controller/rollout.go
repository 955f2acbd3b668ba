package controller

import (
	"fmt"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// revision is what a rollout step needs to know of one revision's application.
type revision struct {
	// desired is the application's spec.instance.
	desired int
	// available[i] says whether index i (< desired) is available: its current run is
	// Running and, when its template has local health checks, healthy.
	available []bool
}

func (r revision) availableCount() int {
	n := 0
	for _, a := range r.available {
		if a {
			n++
		}
	}
	return n
}

// stepInput is the state a rollout step is decided from. All of it is stored (the
// deployment and its applications and task groups), so a new leader decides the same.
type stepInput struct {
	instances int // spec.instance
	ru        v4.RollingUpdate
	current   revision
	old       []revision // oldest first
	lastStep  time.Time
	now       time.Time
}

// stepPlan is what to do now.
type stepPlan struct {
	current int   // new spec.instance of the current revision
	old     []int // new spec.instance of each old revision (0: delete it)
	// stepped: an instance count changed (status.lastStep becomes now); pause: the step
	// ended a rollingManually step, so the rollout pauses.
	stepped, pause bool
	// wait: look again after this long even without events (0: only on events).
	wait time.Duration
	// blocked says why nothing could be done; expired when that has lasted past the
	// step deadline (the rollout is suspended).
	blocked string
	expired bool
}

// planStep decides one step of a rolling update, with Kubernetes' arithmetic and BCS's
// gating: at most instances+maxSurge instances are wanted, at least
// instances-maxUnavailable stay available, and nothing more happens until every wanted
// instance of the current revision is available. CreateFirst starts a step by scaling
// the current revision up and ends it by scaling old ones down once the new instances are
// available; DeleteFirst scales old revisions down and the current one up together.
// Steps are upgradeDuration apart.
func planStep(in stepInput) stepPlan {
	p := stepPlan{current: min(in.current.desired, in.instances), old: make([]int, len(in.old))}
	oldTotal := 0
	for i, o := range in.old {
		p.old[i] = o.desired
		oldTotal += o.desired
	}
	if oldTotal == 0 { // nothing left to replace: the current revision takes every instance
		p.current = in.instances
		p.stepped = p.current != in.current.desired
		return p
	}
	if avail := in.current.availableCount(); avail < in.current.desired {
		p.blocked = fmt.Sprintf("waiting for %d of %d new instances to become available", in.current.desired-avail, in.current.desired)
		return in.checkDeadline(p)
	}
	gapDone := in.lastStep.Add(time.Duration(in.ru.UpgradeDuration) * time.Second)
	maxTotal := in.instances + max(in.ru.MaxSurge, 1)
	up := func(total int) int { return max(0, min(in.instances-p.current, maxTotal-total)) }
	total := p.current + oldTotal
	if in.ru.RollingOrder == v4.RollingDeleteFirst {
		if in.now.Before(gapDone) {
			p.wait = gapDone.Sub(in.now)
			return p
		}
		removed := in.scaleDown(p.old)
		n := up(total - removed)
		p.current += n
		p.stepped = removed+n > 0
		p.pause = p.stepped && in.ru.RollingManually
	} else {
		if n := up(total); n > 0 { // the start of a step
			if in.now.Before(gapDone) {
				p.wait = gapDone.Sub(in.now)
				return p
			}
			p.current += n
			p.stepped = true
			return p
		}
		removed := in.scaleDown(p.old) // the end of a step: the new instances are available
		p.stepped = removed > 0
		p.pause = p.stepped && in.ru.RollingManually
	}
	if !p.stepped {
		p.blocked = fmt.Sprintf("no old instance can stop without leaving fewer than %d available", in.minAvailable())
		return in.checkDeadline(p)
	}
	return p
}

func (in stepInput) minAvailable() int { return max(0, in.instances-in.ru.MaxUnavailable) }

// scaleDown lowers the old revisions' counts (oldest revision first, highest index first,
// as the application controller stops them) while at least minAvailable instances stay
// available; stopping an unavailable instance costs nothing. It returns how many go.
func (in stepInput) scaleDown(counts []int) int {
	avail := in.current.availableCount()
	for _, o := range in.old {
		avail += o.availableCount()
	}
	removed := 0
	for r, o := range in.old {
		for counts[r] > 0 {
			idx := counts[r] - 1
			if idx < len(o.available) && o.available[idx] {
				if avail-1 < in.minAvailable() {
					return removed
				}
				avail--
			}
			counts[r]--
			removed++
		}
	}
	return removed
}

// checkDeadline marks a blocked step expired once it has waited past the step deadline,
// else asks to be woken when it would expire.
func (in stepInput) checkDeadline(p stepPlan) stepPlan {
	limit := time.Duration(cmpOr(in.ru.StepDeadline, v4.DefaultStepDeadline)) * time.Second
	waited := in.now.Sub(in.lastStep)
	if waited >= limit {
		p.expired = true
		p.blocked = fmt.Sprintf("step exceeded its %s deadline: %s", limit, p.blocked)
		return p
	}
	p.wait = limit - waited
	return p
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
