package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
)

// snapshotLag is how soon a node the store has as ready, but the scheduler's snapshot
// does not have yet, is tried again (the two read separate watches).
const snapshotLag = 500 * time.Millisecond

// daemonPass is one reconcile of one daemonset over every node.
type daemonPass struct {
	c      *DaemonsetController
	key    scheduler.AppKey
	ds     *v4.Daemonset
	nodes  map[string]*v4.Node
	byNode map[string][]*v4.TaskGroup
	now    time.Time
	policy *v4.RestartPolicy
	tmpl   []byte // the template as JSON, to tell up-to-date task groups

	missing  []string           // nodes to place on now, in name order
	restarts map[string]restart // replacements on their node
	used     map[int]bool       // instance indexes taken
	outdated []*v4.TaskGroup    // running an older template on nodes that take new ones
	// unavailable counts nodes that take task groups whose task group does not run
	// (starting, stopping, in back-off): a rollout waits for it to be 0.
	unavailable int

	st     v4.DaemonsetStatus
	phases []string // current phase on every node counted in st.Desired
	next   time.Duration
}

// restart is the replacement of a node's ended task group: same index, one more restart,
// and the restarts within the storm window.
type restart struct {
	index, attempt int
	recent         []time.Time
	// portRetries and taken as restartInfo's (portretry.go).
	portRetries int
	taken       map[string][]int
}

func newDaemonPass(c *DaemonsetController, key scheduler.AppKey, ds *v4.Daemonset, nodes []*v4.Node, byNode map[string][]*v4.TaskGroup) *daemonPass {
	p := &daemonPass{c: c, key: key, ds: ds, byNode: byNode, now: time.Now(), nodes: map[string]*v4.Node{},
		restarts: map[string]restart{}, used: map[int]bool{}}
	for _, n := range nodes {
		p.nodes[n.Metadata.Name] = n
	}
	p.policy = &v4.RestartPolicy{Policy: v4.RestartAlways}
	if ds.RestartPolicy != nil && ds.RestartPolicy.Policy != "" {
		p.policy = ds.RestartPolicy
	}
	if b, err := json.Marshal(ds.Spec.Template); err == nil {
		p.tmpl = b
	} // else nil: every task group counts as up to date, so nothing is rolled in a loop
	for _, tgs := range byNode {
		for _, tg := range tgs {
			p.used[tg.Spec.Index] = true
		}
	}
	return p
}

func (p *daemonPass) wake(d time.Duration) {
	if d > 0 && (p.next == 0 || d < p.next) {
		p.next = d
	}
}

// takes says whether a node takes new task groups: ready and not disabled. A node that
// does not keeps what runs there.
func takes(n *v4.Node) bool { return n.Status.Phase == v4.NodeReady && !n.Spec.Disabled }

// run decides for every node, rolls the template on, and places what is missing.
func (p *daemonPass) run(ctx context.Context) error {
	for _, name := range slices.Sorted(maps.Keys(p.byNode)) {
		runs := p.byNode[name]
		node := p.nodes[name]
		if node == nil {
			if err := p.nodeGone(ctx, name, runs); err != nil {
				return err
			}
			continue
		}
		cur := runs[len(runs)-1]
		p.wake(p.c.removeAll(ctx, runs[:len(runs)-1])) // older runs on the node
		if err := p.current(ctx, node, cur); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.nodes)) {
		if len(p.byNode[name]) == 0 && takes(p.nodes[name]) {
			p.missing = append(p.missing, name)
		}
	}
	if err := p.placeMissing(ctx); err != nil {
		return err
	}
	p.rollout(ctx) // after placing: a node that just got its task group is not running yet
	return nil
}

// nodeGone deletes the task groups of a deleted node at once: no agent is left to stop
// them, and one that comes back stops whatever has no task group.
func (p *daemonPass) nodeGone(ctx context.Context, node string, runs []*v4.TaskGroup) error {
	for _, tg := range runs {
		if err := p.c.deleteTG(ctx, tg); err != nil {
			return err
		}
		p.c.event(p.key, v4.EventNormal, "NodeGone", fmt.Sprintf("node %s was deleted: removed %s", node, tg.Metadata.Name))
	}
	return nil
}

// current handles the newest task group of a node.
func (p *daemonPass) current(ctx context.Context, node *v4.Node, cur *v4.TaskGroup) error {
	phase := cur.Status.Phase
	if phase == "" {
		phase = v4.StatusStaging
	}
	p.c.observe(cur, phase)
	p.st.Current++
	running := phase == v4.StatusRunning || phase == v4.StatusRestarting
	switch {
	case cur.Spec.Desired == v4.DesiredStopped: // being replaced: the node gets a new one once it is gone
		p.count(phase)
		p.unavailable++
		p.wake(p.c.removeAll(ctx, []*v4.TaskGroup{cur}))
	case phase == v4.StatusLost:
		p.count(phase) // status only: a daemonset's task group is never moved (BCS)
	case !v4.Terminal(phase):
		p.count(phase)
		switch {
		case p.upToDate(cur):
			p.st.UpToDate++
		case takes(node):
			p.outdated = append(p.outdated, cur)
		}
		if takes(node) && !running {
			p.unavailable++
		}
	default:
		return p.ended(ctx, node, cur, phase)
	}
	return nil
}

// ended applies the restart policy to a node's ended task group; the replacement goes
// on the same node, and only when the node takes new task groups.
func (p *daemonPass) ended(ctx context.Context, node *v4.Node, cur *v4.TaskGroup, phase string) error {
	name := node.Metadata.Name
	plan := planRestart(p.policy, cur, p.now)
	switch wait := plan.at.Sub(p.now); {
	case !plan.restart:
		p.count(phase)
		p.c.eventOnce(cur.Metadata.Name, "NotRestarted", p.key, v4.EventWarning, "NotRestarted",
			fmt.Sprintf("node %s: %s is %s and stays so: %s", name, cur.Metadata.Name, phase, plan.reason))
		p.note(fmt.Sprintf("node %s: %s", name, plan.reason))
	case !takes(node):
		p.count(phase)
		why := "is disabled"
		if node.Status.Phase != v4.NodeReady {
			why = "is " + node.Status.Phase
		}
		p.c.eventOnce(cur.Metadata.Name, "NodeUnavailable", p.key, v4.EventWarning, "NotRestarted",
			fmt.Sprintf("node %s %s: %s (%s) is not restarted until it takes task groups again", name, why, cur.Metadata.Name, phase))
		p.note(fmt.Sprintf("node %s %s", name, why))
	case wait > 0:
		p.count(phase)
		p.unavailable++
		p.c.eventOnce(cur.Metadata.Name, "BackOff", p.key, v4.EventNormal, "BackOff",
			fmt.Sprintf("node %s: %s is %s; restarting in %s (restart %d)", name, cur.Metadata.Name, phase, wait.Round(time.Second), plan.attempt))
		p.wake(wait)
	default:
		if err := p.c.deleteTG(ctx, cur); err != nil {
			return err
		}
		p.st.Current--
		recent := recentRestarts(cur, p.now)
		if plan.portRetries > 0 { // not a restart: the storm count stays
			recent = cur.Spec.RecentRestarts
			p.c.event(p.key, v4.EventWarning, "PortConflict", portRetryMessage("node "+name, cur, plan.portRetries))
		} else {
			p.c.event(p.key, v4.EventNormal, "Restarting", fmt.Sprintf("node %s: replacing %s (%s), restart %d", name, cur.Metadata.Name, phase, plan.attempt))
			if stormStarts(recent) {
				p.c.record(stormEvent(p.key, cur, recent))
			}
		}
		p.restarts[name] = restart{index: cur.Spec.Index, attempt: plan.attempt, recent: recent,
			portRetries: plan.portRetries, taken: takenPorts(cur)}
		p.missing = append(p.missing, name)
	}
	return nil
}

// count adds a node's task group phase to the status.
func (p *daemonPass) count(phase string) {
	p.st.Desired++
	p.phases = append(p.phases, phase)
	if phase == v4.StatusRunning || phase == v4.StatusRestarting {
		p.st.Running++
	}
}

// note keeps the first message of the pass for the status.
func (p *daemonPass) note(msg string) {
	if p.st.Message == "" {
		p.st.Message = msg
	}
}

// upToDate says whether a task group runs the daemonset's current template.
func (p *daemonPass) upToDate(tg *v4.TaskGroup) bool {
	if p.tmpl == nil {
		return true
	}
	b, err := json.Marshal(tg.Spec.Template)
	return err == nil && bytes.Equal(b, p.tmpl)
}

// rollout replaces one outdated task group at a time, and only while every node that
// takes task groups runs its own: stop the old one; once it is gone the node is missing
// and gets one with the new template; the next node waits until that one runs.
func (p *daemonPass) rollout(ctx context.Context) {
	if len(p.outdated) == 0 || p.unavailable > 0 {
		return
	}
	tg := p.outdated[0]
	p.c.event(p.key, v4.EventNormal, "Updating", fmt.Sprintf("node %s: stopping %s to run the new template (%d node(s) to update)",
		tg.Spec.Node, tg.Metadata.Name, len(p.outdated)))
	p.unavailable++
	p.wake(p.c.removeAll(ctx, []*v4.TaskGroup{tg}))
}

// placeMissing places a task group on each missing node through the scheduler (node
// checks, taints, constraints, resources, ports); nodes that are eligible but lack room
// are retried later with the reason in the status.
func (p *daemonPass) placeMissing(ctx context.Context) error {
	if len(p.missing) == 0 {
		return nil
	}
	indexes := make([]int, len(p.missing))
	free := 0
	for i, node := range p.missing {
		if r, ok := p.restarts[node]; ok {
			indexes[i] = r.index
			continue
		}
		for p.used[free] {
			free++
		}
		indexes[i] = free
		p.used[free] = true
	}
	req, err := scheduler.RequestFor(p.ds, indexes)
	if err != nil {
		p.note(err.Error())
		return nil
	}
	for _, node := range p.missing {
		addTakenPorts(req, p.restarts[node].taken)
	}
	q, err := p.newDSQuota(ctx) // daemonset_quota.go
	if err != nil {
		p.note(err.Error())
		p.wake(unplacedRetry)
		return nil
	}
	var fits []scheduler.NodeFit
	opts := scheduler.Options{Strategy: p.c.opts.Placement, Cluster: p.c.opts.Cluster}
	p.c.feed.With(func(s *scheduler.Snapshot) { fits = s.PlaceOn(req, p.missing, opts) })
	var unplaced []string
	var admitted []scheduler.Placement
	desired := p.st.Desired // the nodes counted, with those admitted so far
	for _, fit := range fits {
		switch {
		case fit.Placement != nil && !q.admit(fit.Node, desired):
			p.hold(*fit.Placement)
		case fit.Placement != nil:
			admitted = append(admitted, *fit.Placement)
			desired++
		case !fit.Ready: // the store has the node ready, the snapshot not yet
			p.wake(snapshotLag)
		case fit.Eligible && q.admit(fit.Node, desired):
			desired++
			p.st.Desired++
			unplaced = append(unplaced, fit.Node+": "+fit.Reason)
		}
	}
	if err := p.createAdmitted(ctx, q, req, admitted, desired); err != nil { // daemonset_quota.go
		return err
	}
	p.reportQuota(q)
	if len(unplaced) > 0 {
		msg := fmt.Sprintf("%d node(s) cannot run it: %s", len(unplaced), strings.Join(unplaced, "; "))
		p.note(msg)
		p.c.eventOnce(p.key.String(), msg, p.key, v4.EventWarning, "FailedScheduling", msg)
		p.wake(unplacedRetry)
	} else {
		p.c.forget(p.key.String())
	}
	return nil
}

func (p *daemonPass) create(ctx context.Context, req *scheduler.Request, pl scheduler.Placement) error {
	tg := newTaskGroup(p.ds, p.ds.KillPolicy, &p.ds.Spec.Template, req, pl, p.now)
	if r, ok := p.restarts[pl.Node]; ok {
		tg.Spec.ReschedTimes, tg.Spec.LastRescheduled, tg.Spec.RecentRestarts = r.attempt, p.now, r.recent
		tg.Spec.PortRetries = r.portRetries
	}
	if err := p.c.create(ctx, tg); err != nil {
		return err
	}
	p.c.event(p.key, v4.EventNormal, "Scheduled", fmt.Sprintf("node %s: placed %s", pl.Node, pl.Name))
	p.st.Current++
	p.st.UpToDate++
	p.unavailable++
	p.count(v4.StatusStaging)
	return nil
}

// status aggregates the nodes' task groups with BCS's application precedence.
func (p *daemonPass) status() v4.DaemonsetStatus {
	st := p.st
	st.Phase = v4.AggregateApplication(p.phases, st.Desired)
	return st
}
