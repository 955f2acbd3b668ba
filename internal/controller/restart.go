package controller

import (
	"fmt"
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

// restartPlan says whether and when an ended task group is replaced.
type restartPlan struct {
	restart bool
	at      time.Time // when the replacement may start
	attempt int       // the replacement's reschedTimes
	reason  string    // why not, when restart is false
}

// planRestart applies the restart policy to a task group in phase phase. BCS bug fixed:
// its reschedule transaction computed this delay and never waited for it.
func planRestart(p *v4.RestartPolicy, tg *v4.TaskGroup, now time.Time) restartPlan {
	policy := v4.RestartOnFailure
	var rp v4.RestartPolicy
	if p != nil {
		rp = *p
		if rp.Policy != "" {
			policy = rp.Policy
		}
	}
	phase := tg.Status.Phase
	switch {
	case policy == v4.RestartNever:
		return restartPlan{reason: "restartPolicy Never"}
	case policy == v4.RestartOnFailure && phase != v4.StatusFailed:
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
	return restartPlan{restart: true, at: ended.Add(delay), attempt: n + 1}
}
