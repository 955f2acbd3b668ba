package engine

import (
	"fmt"
	"math"
	"strconv"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// call is one use of a template: where (path), with what (args, scope), under which
// steps or dag node (boundary) and parallelism limits.
type call struct {
	path string
	tmpl *v4.WfTemplate
	ref  *v4.WfTemplateRef
	args map[string]string
	// arts are the artifacts passed as arguments, their from resolved to "nodeID/name".
	arts     []v4.WfArtifact
	scope    *scope
	boundary string
	depth    int
	limit    *limiter
	// lib is where the template's steps and tasks find templates by name: the
	// workflow's, or a workflowtemplate's for a template reached by templateRef.
	lib []v4.WfTemplate
}

// run runs a template at its path: attempts under a Retry node when it has a retry
// strategy, else one attempt.
func (e *engine) run(c call) v4.WfNodeStatus {
	switch {
	case c.tmpl == nil:
		return e.errorNode(c.path, c.boundary, "unknown template")
	case c.depth > v4.MaxWfNesting:
		return e.errorNode(c.path, c.boundary, fmt.Sprintf("calls nest deeper than %d", v4.MaxWfNesting))
	case c.tmpl.RetryStrategy != nil:
		return e.retry(c)
	}
	return e.attempt(c, c.path, 0)
}

var nodeTypes = map[string]string{v4.WfTypeContainer: v4.WfNodePod, v4.WfTypeProcess: v4.WfNodePod,
	v4.WfTypeScript: v4.WfNodePod, v4.WfTypeSteps: v4.WfNodeSteps, v4.WfTypeDAG: v4.WfNodeDAG, v4.WfTypeSuspend: v4.WfNodeSuspend,
	v4.WfTypeResource: v4.WfNodePod} // a resource step is a Pod node the controller runs itself

// attempt runs one attempt of a template at path.
func (e *engine) attempt(c call, path string, attempt int) v4.WfNodeStatus {
	typ := c.tmpl.Type()
	n := e.newNode(path, attempt, nodeTypes[typ], c.tmpl.Name, c.boundary)
	if v4.WfPhaseFinished(n.Phase) {
		return n
	}
	in, vars, err := inputs(c.tmpl, c.args, c.arts)
	if err != nil {
		n.Phase, n.Message, n.FinishedAt = v4.WfError, err.Error(), e.in.Now
		e.put(n)
		return n
	}
	n.Inputs, n.TemplateRef = in, c.ref
	sc := c.scope.withMap(vars).with("retries", strconv.Itoa(attempt))
	switch typ {
	case v4.WfTypeContainer, v4.WfTypeProcess, v4.WfTypeScript, v4.WfTypeResource:
		return e.pod(n, c, sc)
	case v4.WfTypeSuspend:
		return e.suspend(n, c)
	case v4.WfTypeSteps:
		return e.steps(n, c, sc)
	case v4.WfTypeDAG:
		return e.dag(n, c, sc)
	}
	n.Phase, n.Message = v4.WfError, "a template must have one type"
	e.put(n)
	return n
}

// pod starts a Pod node when the limits allow, or checks the deadline of a started one.
func (e *engine) pod(n v4.WfNodeStatus, c call, sc *scope) v4.WfNodeStatus {
	if _, started := e.nodes[n.ID]; started {
		if d := c.tmpl.ActiveDeadlineSeconds; d > 0 {
			end := n.StartedAt.Add(time.Duration(d) * time.Second)
			if e.in.Now.Before(end) {
				e.requeue(end)
				return n
			}
			n.Phase, n.Message, n.FinishedAt = v4.WfFailed, "the template's activeDeadlineSeconds passed", e.in.Now
			e.put(n)
			e.plan.Stop = append(e.plan.Stop, n.ID)
			e.active--
		}
		return n
	}
	if !e.mayStart(c.limit) {
		return n // not recorded: the caller waits for it
	}
	resolved, err := resolveTask(c.tmpl, sc.with("pod.name", n.ID).with("node.name", n.Name))
	if err != nil {
		n.Phase, n.Message, n.FinishedAt = v4.WfError, err.Error(), e.in.Now
		e.put(n)
		return n
	}
	e.put(n)
	e.take(c.limit)
	if d := c.tmpl.ActiveDeadlineSeconds; d > 0 {
		e.requeue(n.StartedAt.Add(time.Duration(d) * time.Second))
	}
	e.plan.Start = append(e.plan.Start, Start{NodeID: n.ID, Name: n.Name, Template: resolved, Attempt: n.Attempt, Admitted: c.tmpl})
	return n
}

// suspend waits to be resumed (the controller sets the node Succeeded) or for its duration.
func (e *engine) suspend(n v4.WfNodeStatus, c call) v4.WfNodeStatus {
	n.Phase = v4.WfRunning
	if s := c.tmpl.Suspend.Duration; s != "" {
		d, err := v4.ParseWfDuration(s)
		switch end := n.StartedAt.Add(d); {
		case err != nil:
			n.Phase, n.Message = v4.WfError, err.Error()
		case !e.in.Now.Before(end):
			n.Phase, n.FinishedAt = v4.WfSucceeded, e.in.Now
		default:
			e.requeue(end)
		}
	}
	e.put(n)
	return n
}

// maxRetries bounds a retryStrategy without a limit.
const maxRetries = 1000

// retry runs the attempts of a template with a retry strategy as children of a Retry
// node, each attempt after the last failed as its policy allows and its backoff is due.
func (e *engine) retry(c call) v4.WfNodeStatus {
	n := e.newNode(c.path, 0, v4.WfNodeRetry, c.tmpl.Name, c.boundary)
	if v4.WfPhaseFinished(n.Phase) {
		return n
	}
	n.Phase = v4.WfRunning
	e.put(n)
	k := len(n.Children)
	if k > 0 {
		last := e.nodes[n.Children[k-1]]
		if !v4.WfPhaseFinished(last.Phase) {
			e.attempt(c, attemptPath(c.path, k-1), k-1) // progress a steps or dag attempt, check deadlines
			return e.nodes[n.ID]
		}
		if done, ok := e.retryDone(&n, last, c.tmpl.RetryStrategy, k); done || !ok {
			return n
		}
	}
	child := e.attempt(c, attemptPath(c.path, k), k)
	if _, ok := e.nodes[child.ID]; ok {
		e.addChild(n.ID, child.ID)
	}
	return e.nodes[n.ID]
}

func attemptPath(path string, k int) string { return path + "(" + strconv.Itoa(k) + ")" }

// retryDone settles a Retry node after its k-th attempt finished: done when it
// succeeded or may not be retried; not ok while the backoff runs.
func (e *engine) retryDone(n *v4.WfNodeStatus, last v4.WfNodeStatus, rs *v4.WfRetryStrategy, k int) (done, ok bool) {
	finish := func(phase, msg string) (bool, bool) {
		n.Phase, n.Message, n.FinishedAt, n.Outputs = phase, msg, e.in.Now, last.Outputs
		e.put(*n)
		return true, true
	}
	limit := maxRetries
	if rs.Limit != nil {
		limit = *rs.Limit
	}
	switch {
	case last.Phase == v4.WfSucceeded:
		return finish(v4.WfSucceeded, "")
	case !retries(rs.RetryPolicy, last.Phase):
		return finish(last.Phase, last.Message)
	case k > limit:
		return finish(last.Phase, fmt.Sprintf("%s (no retries left of %d)", last.Message, limit))
	}
	first := e.nodes[n.Children[0]]
	due, maxEnd := backoff(rs.Backoff, k, first.StartedAt, last.FinishedAt)
	switch {
	case !maxEnd.IsZero() && due.After(maxEnd):
		return finish(last.Phase, last.Message+" (the backoff's maxDuration passed)")
	case e.in.Now.Before(due):
		e.requeue(due)
		e.plan.Retries = append(e.plan.Retries, Retry{NodeID: n.ID, Attempt: k, At: due})
		return false, false
	}
	return false, true
}

// retries reports whether the policy retries an attempt that ended in phase.
func retries(policy, phase string) bool {
	switch policy {
	case v4.RetryAlways:
		return phase == v4.WfFailed || phase == v4.WfError
	case v4.RetryOnError:
		return phase == v4.WfError
	}
	return phase == v4.WfFailed // OnFailure, the default
}

// backoff is when the k-th retry (k ≥ 1) is due: duration × factor^(k-1) after the last
// attempt finished; and the time after which no retry starts (zero: none).
func backoff(b *v4.WfBackoff, k int, firstStart, lastEnd time.Time) (due, maxEnd time.Time) {
	if b == nil {
		return lastEnd, time.Time{}
	}
	base, _ := v4.ParseWfDuration(b.Duration) // checked at admission
	factor := b.Factor
	if factor == 0 {
		factor = 2
	}
	delay := float64(base) * math.Pow(factor, float64(k-1))
	if delay > float64(365*24*time.Hour) || math.IsInf(delay, 0) || math.IsNaN(delay) {
		delay = float64(365 * 24 * time.Hour)
	}
	due = lastEnd.Add(time.Duration(delay))
	if b.MaxDuration != "" {
		if m, err := v4.ParseWfDuration(b.MaxDuration); err == nil {
			maxEnd = firstStart.Add(m)
		}
	}
	return due, maxEnd
}
