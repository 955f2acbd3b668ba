// Package engine decides what a workflow does next (docs/workflows.md). It is pure: given
// a workflow's spec and the statuses of its nodes it returns the nodes to record, the
// steps to start or stop, the retries due and the workflow's phase, and does no I/O, so
// the controller that acts on it is small and the whole model is tested without a
// cluster. Like Argo's operator, each call walks the templates from the entrypoint and
// finds the nodes it made before by their IDs: an ID is a hash of the workflow's UID, the
// node's path and its attempt, so a controller that takes over after a failover computes
// the same IDs and adopts what is running instead of starting it again.
package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// Input is what one pass reads.
type Input struct {
	UID       string // the workflow's UID
	Name      string
	Namespace string
	Spec      *v4.WorkflowSpec
	// Refs are the workflowtemplates the spec's templateRefs name, by name.
	Refs map[string]*v4.WorkflowTemplate
	// Nodes are the statuses recorded so far, by ID. The controller sets the phase,
	// times and outputs of Pod nodes from their task groups, and resumes Suspend nodes.
	Nodes     map[string]v4.WfNodeStatus
	StartedAt time.Time // when the workflow started
	Now       time.Time
	// MaxStarts bounds the Pod nodes one pass starts (0: no bound), so a pass over a
	// loop of 10,000 items does bounded work; Plan.More says more are waiting.
	MaxStarts int
	// Shutdown is the workflow's spec.shutdown: Stop (no new step, running ones stopped,
	// the exit handler runs) or Terminate (the same without the exit handler).
	Shutdown string
}

// Start is a Pod node to start: its template with the node's inputs substituted.
type Start struct {
	NodeID   string
	Name     string
	Template v4.WfTemplate
	Attempt  int
	// Admitted is the template as the spec holds it, before substitution: a resource
	// step's object must be the one admission judged (the controller compares them).
	Admitted *v4.WfTemplate
}

// Plan is what one pass decided.
type Plan struct {
	// Updates are the nodes created or changed by this pass, in the order it made them.
	Updates []v4.WfNodeStatus
	// Start are Pod nodes to start (each also in Updates, Pending).
	Start []Start
	// Stop are IDs of Pod nodes past a deadline (each also in Updates, Failed).
	Stop []string
	// Retries are the retries waiting for their backoff.
	Retries []Retry
	// Phase is the workflow's phase; Message says why it failed.
	Phase   string
	Message string
	// Requeue is when to run a pass again though nothing changes (a retry's backoff, a
	// deadline, a timed suspend); zero: on the next change only.
	Requeue time.Time
	// More is set when MaxStarts held steps back: the next pass starts them.
	More bool
}

// Retry is a retry due at a time: attempt Attempt of the Retry node NodeID.
type Retry struct {
	NodeID  string
	Attempt int
	At      time.Time
}

// Bounds of a pass, beyond admission's (api/v4): substituted text and items from
// withParam are only known at run time.
const (
	maxSubstituted = 1 << 20 // bytes of one template after substitution
	maxItemLabel   = 32      // bytes of an item in its node's name
)

// NodeID is the stable ID of a node: the same workflow, path and attempt give the same ID
// on every server.
func NodeID(uid, path string, attempt int) string {
	h := sha256.Sum256([]byte(uid + "\x00" + path + "\x00" + strconv.Itoa(attempt)))
	return "n" + hex.EncodeToString(h[:10])
}

// engine is one pass.
type engine struct {
	in      Input
	nodes   map[string]v4.WfNodeStatus
	dirty   map[string]bool
	order   []string
	plan    Plan
	active  int  // Pod nodes pending or running, for the workflow's parallelism
	halted  bool // no new step starts: suspended, or past the deadline
	expired bool // past the workflow's deadline
	wfScope *scope
	linked  map[string]bool // children linked this pass
	owned   map[string]bool // parents whose Children this pass copied
}

// Next runs one pass.
func Next(in Input) Plan {
	e := &engine{in: in, nodes: make(map[string]v4.WfNodeStatus, len(in.Nodes)), dirty: map[string]bool{},
		linked: map[string]bool{}, owned: map[string]bool{}}
	for id, n := range in.Nodes {
		e.nodes[id] = n
		if n.Type == v4.WfNodePod && !v4.WfPhaseFinished(n.Phase) {
			e.active++
		}
	}
	e.halted = in.Spec.Suspend
	e.wfScope = e.workflowScope()
	if why := shutdownMessage(in.Shutdown); why != "" {
		e.halted = true
		e.stopActive(why)
	}
	if d := in.Spec.ActiveDeadlineSeconds; d > 0 {
		end := in.StartedAt.Add(time.Duration(d) * time.Second)
		if !in.Now.Before(end) {
			e.halted, e.expired = true, true
			e.stopActive("the workflow's activeDeadlineSeconds passed")
		} else {
			e.requeue(end)
		}
	}
	main := e.runRoot()
	e.finish(main)
	for _, id := range e.order {
		e.plan.Updates = append(e.plan.Updates, e.nodes[id])
	}
	return e.plan
}

// runRoot runs the entrypoint, then the workflow's exit handler once it has finished.
func (e *engine) runRoot() v4.WfNodeStatus {
	spec := e.in.Spec
	t := findTemplate(spec.Templates, spec.Entrypoint)
	if t == nil {
		return e.errorNode(e.in.Name, "", fmt.Sprintf("unknown entrypoint %q", spec.Entrypoint))
	}
	args := argValues(spec.Arguments)
	return e.run(call{path: e.in.Name, tmpl: t, args: args, scope: e.wfScope, lib: spec.Templates})
}

// finish runs the exit handler and sets the workflow's phase from the main node and it.
func (e *engine) finish(main v4.WfNodeStatus) {
	why := shutdownMessage(e.in.Shutdown)
	switch {
	case why != "" && !v4.WfPhaseFinished(main.Phase):
		main = e.end(main, v4.WfFailed, why)
	case e.expired && !v4.WfPhaseFinished(main.Phase):
		main = e.end(main, v4.WfFailed, "the workflow's activeDeadlineSeconds passed")
	case !v4.WfPhaseFinished(main.Phase):
		e.plan.Phase = v4.WfRunning
		return
	}
	phase, msg := main.Phase, main.Message
	switch {
	case why != "":
		phase, msg = v4.WfFailed, why
	case e.expired:
		phase, msg = v4.WfFailed, "the workflow's activeDeadlineSeconds passed"
	case phase == v4.WfOmitted || phase == v4.WfSkipped:
		phase = v4.WfSucceeded
	}
	if exit := e.in.Spec.OnExit; exit != "" && e.in.Shutdown != v4.ShutdownTerminate {
		sc := e.wfScope.with("workflow.status", phase)
		sc = sc.with("workflow.failures", failures(e.nodes))
		e.halted = e.in.Spec.Suspend // an exit handler runs after a deadline too, not while suspended
		h := e.run(call{path: e.in.Name + ".onExit", tmpl: findTemplate(e.in.Spec.Templates, exit), scope: sc, lib: e.in.Spec.Templates})
		if !v4.WfPhaseFinished(h.Phase) {
			e.plan.Phase = v4.WfRunning
			return
		}
		if phase == v4.WfSucceeded && h.Phase != v4.WfSucceeded && h.Phase != v4.WfSkipped {
			phase, msg = v4.WfFailed, "the exit handler failed: "+h.Message
		}
	}
	e.plan.Phase, e.plan.Message = phase, msg
}

// shutdownMessage is why a shut-down workflow failed ("" when it is not shut down).
func shutdownMessage(s string) string {
	switch s {
	case v4.ShutdownStop:
		return "Stopped"
	case v4.ShutdownTerminate:
		return "Terminated"
	}
	return ""
}

// put records a node, marking it for Updates when it differs from what is recorded.
func (e *engine) put(n v4.WfNodeStatus) {
	old, ok := e.nodes[n.ID]
	if ok && nodeEqual(old, n) {
		return
	}
	e.nodes[n.ID] = n
	if !e.dirty[n.ID] {
		e.dirty[n.ID] = true
		e.order = append(e.order, n.ID)
	}
}

// requeue asks for a pass at t at the latest.
func (e *engine) requeue(t time.Time) {
	if e.plan.Requeue.IsZero() || t.Before(e.plan.Requeue) {
		e.plan.Requeue = t
	}
}

// stopActive fails every pending or running Pod node and asks the controller to stop it.
func (e *engine) stopActive(why string) {
	exit := e.in.Name + ".onExit"
	for _, id := range sortedIDs(e.nodes) {
		n := e.nodes[id]
		if e.in.Shutdown != v4.ShutdownTerminate && strings.HasPrefix(n.Name, exit) {
			continue // the workflow's exit handler runs after a stop or a deadline
		}
		if n.Type == v4.WfNodePod && !v4.WfPhaseFinished(n.Phase) {
			n.Phase, n.Message, n.FinishedAt = v4.WfFailed, why, e.in.Now
			e.put(n)
			e.plan.Stop = append(e.plan.Stop, id)
			e.active--
		}
	}
}

func (e *engine) errorNode(path, boundary, msg string) v4.WfNodeStatus {
	n := e.newNode(path, 0, v4.WfNodePod, "", boundary)
	n.Phase, n.Message, n.FinishedAt = v4.WfError, msg, e.in.Now
	e.put(n)
	return n
}

// newNode returns the node recorded for path and attempt, or a new one.
func (e *engine) newNode(path string, attempt int, typ, tmpl, boundary string) v4.WfNodeStatus {
	id := NodeID(e.in.UID, path, attempt)
	if n, ok := e.nodes[id]; ok {
		return n
	}
	return v4.WfNodeStatus{ID: id, Name: path, DisplayName: displayName(path), Type: typ, Phase: v4.WfPending,
		TemplateName: tmpl, BoundaryID: boundary, StartedAt: e.in.Now, Attempt: attempt}
}

// addChild links child under parent. A child recorded before this pass was linked in
// the pass that made it, so only new children are looked for (a loop of 10,000 items
// must not cost 10,000² comparisons a pass); a parent's list is copied once a pass,
// as the input's is shared.
func (e *engine) addChild(parentID, childID string) {
	if _, old := e.in.Nodes[childID]; old {
		return
	}
	p, ok := e.nodes[parentID]
	if !ok {
		return
	}
	if e.linked[childID] {
		return
	}
	e.linked[childID] = true
	if !e.owned[parentID] {
		e.owned[parentID] = true
		p.Children = append(make([]string, 0, len(p.Children)+1), p.Children...)
	}
	p.Children = append(p.Children, childID)
	e.put(p)
}
