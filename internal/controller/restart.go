package controller

import (
	"fmt"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// Restart timing (BCS): the delay before restart n (counting from 0) is
// interval + n*backoff seconds, capped like BCS's at 86400-480 s; the count starts over
// when the task group had run for 30 minutes before it ended.
const (
	maxRestartDelay = (86400 - 480) * time.Second
	healthyReset    = 30 * time.Minute
)

// Crash-loop backoff (docs/operations.md): a run that ends within crashLoopReset of its
// start is restarted no sooner than a floor that starts at crashLoopFloor and doubles with
// each such run in a row, up to maxCrashLoopFloor, whatever the restart policy's own
// delay. Without it a command that exits at once, with BCS's default interval 0, restarts
// several times a second forever and fills etcd with task groups and events.
const (
	crashLoopFloor    = 2 * time.Second
	maxCrashLoopFloor = 5 * time.Minute
	crashLoopReset    = 10 * time.Minute
)

// defaultLostGrace is how long an instance Lost under OnFailure waits for its node to
// come back before it is replaced elsewhere; hostRetainTime, when set, is the wait
// instead. BCS's OnFailure never replaced a Lost instance, so a node that never came back
// left its application short for good (docs/lifecycle.md).
const defaultLostGrace = 5 * time.Minute

// lostGrace is that wait under rp.
func lostGrace(rp v4.RestartPolicy) time.Duration {
	if rp.HostRetainTime > 0 {
		return time.Duration(rp.HostRetainTime) * time.Second
	}
	return defaultLostGrace
}

// restartPlan says whether and when an ended task group is replaced.
type restartPlan struct {
	restart bool
	at      time.Time // when the replacement may start
	attempt int       // the replacement's reschedTimes
	reason  string    // why not, when restart is false
	// crashLoops is the replacement's CrashLoops; crashLoop is set when the crash-loop
	// floor, not the policy, set the delay.
	crashLoops int
	crashLoop  bool
	// lostGrace is set when the wait was the grace of an instance Lost under OnFailure:
	// it waited for its node already, and its replacement goes anywhere.
	lostGrace bool
	// portRetries, when not 0, is the replacement's PortRetries: the run did not start
	// because random host ports were taken, and is placed again now (portretry.go).
	portRetries int
}

// planRestart applies the restart policy to a task group in phase phase. BCS bug fixed:
// its reschedule transaction computed this delay and never waited for it.
func planRestart(p *v4.RestartPolicy, tg *v4.TaskGroup, now time.Time) restartPlan {
	if portRetry(tg) { // never ran: whatever the policy, it gets other ports at once
		return restartPlan{restart: true, at: now, attempt: tg.Spec.ReschedTimes, crashLoops: tg.Spec.CrashLoops,
			portRetries: tg.Spec.PortRetries + 1}
	}
	policy := v4.RestartOnFailure
	var rp v4.RestartPolicy
	if p != nil {
		rp = *p
		if rp.Policy != "" {
			policy = rp.Policy
		}
	}
	phase := tg.Status.Phase
	lostOnFailure := policy == v4.RestartOnFailure && phase == v4.StatusLost
	switch {
	case policy == v4.RestartNever:
		return restartPlan{reason: "restartPolicy Never"}
	case policy == v4.RestartOnFailure && phase != v4.StatusFailed && !lostOnFailure:
		return restartPlan{reason: fmt.Sprintf("restartPolicy OnFailure does not restart %s", phase)}
	case policy == v4.RestartAlways && phase != v4.StatusFailed && phase != v4.StatusLost && phase != v4.StatusFinish:
		return restartPlan{reason: fmt.Sprintf("restartPolicy Always does not restart %s", phase)}
	}
	n := tg.Spec.ReschedTimes
	st := tg.Status
	if !st.StartedAt.IsZero() && !st.FinishedAt.IsZero() && st.FinishedAt.Sub(st.StartedAt) >= healthyReset {
		n = 0 // it ran long enough: a new failure starts the count over
	}
	if rp.MaxTimes > 0 && n >= rp.MaxTimes {
		return restartPlan{reason: fmt.Sprintf("restarted %d times, maxtimes %d reached", n, rp.MaxTimes)}
	}
	delay := min(time.Duration(rp.Interval+n*rp.Backoff)*time.Second, maxRestartDelay)
	ended := st.FinishedAt
	if ended.IsZero() {
		ended = st.Updated
	}
	if ended.IsZero() {
		ended = now
	}
	plan := restartPlan{restart: true, attempt: n + 1, crashLoops: tg.Spec.CrashLoops}
	if phase != v4.StatusLost { // a lost node says nothing about the run itself
		plan.crashLoops = 0
		if st.StartedAt.IsZero() || ended.Sub(st.StartedAt) < crashLoopReset {
			floor := crashLoopDelay(tg.Spec.CrashLoops)
			plan.crashLoops = tg.Spec.CrashLoops + 1
			if floor > delay {
				delay, plan.crashLoop = floor, true
			}
		}
	}
	if lostOnFailure {
		delay, plan.lostGrace = max(delay, lostGrace(rp)), true
	}
	plan.at = ended.Add(delay)
	return plan
}

// crashLoopDelay is the floor of the restart delay after a quick exit that follows n
// quick exits in a row.
func crashLoopDelay(n int) time.Duration {
	d := crashLoopFloor
	for range n {
		if d >= maxCrashLoopFloor {
			break
		}
		d *= 2
	}
	return min(d, maxCrashLoopFloor)
}

// lastExit says how an ended run ended, from its tasks' container info.
func lastExit(tg *v4.TaskGroup) string {
	for _, t := range tg.Status.Tasks {
		switch {
		case t.Info.OOMKilled:
			return fmt.Sprintf("task %s was killed for lack of memory (OOM)", t.Name)
		case t.Info.ExitCode != 0:
			return fmt.Sprintf("task %s exited with code %d", t.Name, t.Info.ExitCode)
		}
	}
	if tg.Status.HealthKilled {
		return "killed after failing its health checks"
	}
	if m := tg.Status.Message; m != "" {
		if len(m) > 200 {
			m = strings.ToValidUTF8(m[:200], "") + "…"
		}
		return m
	}
	return tg.Status.Phase
}
