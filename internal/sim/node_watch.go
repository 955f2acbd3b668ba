package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// A light node's task groups: the list, then the watch from its revision, again after
// any break (a backoff between), as the agent's sync loop.

func (n *lightNode) watchLoop(ctx context.Context) {
	bo := newBackoff(500*time.Millisecond, 30*time.Second)
	for ctx.Err() == nil {
		start := time.Now()
		err := n.syncOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > time.Minute {
			bo.reset()
		}
		n.log.Warn("lost the task group watch; reconnecting", "err", err)
		if !sleep(ctx, bo.next()) {
			return
		}
	}
}

// syncOnce lists the node's task groups, takes them, and follows the watch until it breaks.
func (n *lightNode) syncOnce(ctx context.Context) error {
	tgs, rv, err := n.api.AgentTaskGroups(ctx, n.name)
	if err != nil {
		return fmt.Errorf("list task groups: %w", err)
	}
	listed := make(map[string]bool, len(tgs))
	for _, tg := range tgs {
		listed[tgKey(tg.Metadata.Namespace, tg.Metadata.Name)] = true
		n.handle(tg)
	}
	n.mu.Lock()
	for key := range n.tgs {
		if !listed[key] {
			n.forgetLocked(key)
		}
	}
	n.mu.Unlock()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the watch's reader
	ch, err := n.api.AgentWatchTaskGroups(wctx, n.name, rv)
	if err != nil {
		return fmt.Errorf("watch task groups: %w", err)
	}
	for ev := range ch {
		if ev.Type == client.EventError {
			return ev.Err
		}
		tg, ok := ev.Object.(*v4.TaskGroup)
		if !ok {
			continue
		}
		if ev.Type == client.EventDeleted || tg.Spec.Node != n.name {
			n.mu.Lock()
			n.forgetLocked(tgKey(tg.Metadata.Namespace, tg.Metadata.Name))
			n.mu.Unlock()
			continue
		}
		n.handle(tg)
	}
	return errors.New("the watch ended")
}

// handle takes a task group the server binds to this node: a new one starts (Running
// after the start delay), one to stop is reported Killed. The node's own reports come
// back as changes and change nothing.
func (n *lightNode) handle(tg *v4.TaskGroup) {
	key := tgKey(tg.Metadata.Namespace, tg.Metadata.Name)
	n.mu.Lock()
	defer n.mu.Unlock()
	t, known := n.tgs[key]
	if tg.Spec.Desired == v4.DesiredStopped {
		if known && t.ended || !known && isTerminal(tg.Status.Phase) {
			return
		}
		if !known {
			t = &simTaskGroup{ns: tg.Metadata.Namespace, name: tg.Metadata.Name, names: taskNames(tg)}
			t.status = runningStatus(n.name, n.s.ip, t.names, time.Now())
			n.tgs[key] = t
		}
		n.endLocked(t, v4.StatusKilled, "killed: the task group is to stop", 137)
		return
	}
	if known {
		return
	}
	t = &simTaskGroup{ns: tg.Metadata.Namespace, name: tg.Metadata.Name, names: taskNames(tg)}
	n.tgs[key] = t
	if d := n.s.startDelay(); d > 0 {
		t.timer = time.AfterFunc(d, func() { n.start(key, t) })
		return
	}
	n.startLocked(t)
}

// start runs t's tasks, unless t was forgotten meanwhile.
func (n *lightNode) start(key string, t *simTaskGroup) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.tgs[key] == t && !t.ended {
		n.startLocked(t)
	}
}

func (n *lightNode) startLocked(t *simTaskGroup) {
	n.setLocked(t, runningStatus(n.name, n.s.ip, t.names, time.Now()))
	if rt := n.s.cfg.RunTime; rt > 0 {
		key := tgKey(t.ns, t.name)
		t.timer = time.AfterFunc(rt, func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			if n.tgs[key] != t || t.ended {
				return
			}
			code := drawExitCode(n.s.cfg.ExitCodes)
			phase := v4.StatusFinish
			if code != 0 {
				phase = v4.StatusFailed
			}
			n.endLocked(t, phase, fmt.Sprintf("task %s exited with code %d", t.names[0], code), code)
		})
	}
}

// endLocked ends t's tasks with phase and code.
func (n *lightNode) endLocked(t *simTaskGroup, phase, msg string, code int) {
	if t.timer != nil {
		t.timer.Stop()
	}
	t.ended = true
	n.setLocked(t, endedStatus(t.status, phase, msg, code, time.Now()))
}

// setLocked records t's new status and queues it for the server.
func (n *lightNode) setLocked(t *simTaskGroup, st v4.TaskGroupStatus) {
	t.status, t.started = st, true
	t.version++
	n.rep.enqueue(tgKey(t.ns, t.name), t.version)
}

// forgetLocked drops a task group the server no longer binds to this node.
func (n *lightNode) forgetLocked(key string) {
	t, ok := n.tgs[key]
	if !ok {
		return
	}
	if t.timer != nil {
		t.timer.Stop()
	}
	delete(n.tgs, key)
	n.rep.drop(key)
}

// isTerminal reports whether phase is one a task group's tasks do not leave.
func isTerminal(phase string) bool {
	switch phase {
	case v4.StatusFinish, v4.StatusFailed, v4.StatusKilled, v4.StatusError, v4.StatusLost:
		return true
	}
	return false
}
