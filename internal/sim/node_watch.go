package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/agent"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/ctxtime"
)

// A light node's task groups: the list, then the watch from its revision, again after
// any break (a backoff between), as the agent's sync loop.

func (n *lightNode) watchLoop(ctx context.Context) {
	bo := ctxtime.NewBackoff(500*time.Millisecond, 30*time.Second)
	for ctx.Err() == nil {
		start := time.Now()
		err := n.syncOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > time.Minute {
			bo.Reset()
		}
		n.log.Warn("lost the task group watch; reconnecting", "err", err)
		if !sleep(ctx, bo.Next()) {
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
		v := viewOf(tg)
		listed[v.key()] = true
		n.handle(v)
	}
	n.mu.Lock()
	for key := range n.tgs {
		if !listed[key] {
			n.forgetLocked(key)
		}
	}
	n.mu.Unlock()
	return n.watch(ctx, rv)
}

// watch follows the node's task groups after revision rv, as the agent's client does
// (GET .../taskgroups?watch=true, a line per change), until the stream breaks. A change
// is decoded into tgView, not a whole task group: a task group's line is mostly its
// template and status, which a light node never reads, and decoding them all was most
// of a simulator's work in a burst.
func (n *lightNode) watch(ctx context.Context, rv string) error {
	q := url.Values{"watch": {"true"}, "resourceVersion": {rv}}
	u := n.api.Server() + "/v1/agent/nodes/" + url.PathEscape(n.name) + "/taskgroups?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("watch task groups: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "berth-agent/"+agent.Version)
	resp, err := n.hc.Do(req)
	if err != nil {
		return fmt.Errorf("watch task groups: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("watch task groups: %s: %s", resp.Status, msg)
	}
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 0, 16<<10), maxWatchLine)
	for lines.Scan() {
		if len(lines.Bytes()) == 0 {
			continue
		}
		var ev watchLine
		if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
			return fmt.Errorf("watch task groups: decode a change: %w", err)
		}
		switch {
		case ev.Type == v4.WatchErrorType:
			return fmt.Errorf("watch task groups: %s", lines.Bytes())
		case ev.Type == client.EventDeleted || ev.Object.Spec.Node != n.name:
			n.mu.Lock()
			n.forgetLocked(ev.Object.key())
			n.mu.Unlock()
		default:
			n.handle(ev.Object)
		}
	}
	if err := lines.Err(); err != nil {
		return fmt.Errorf("watch task groups: %w", err)
	}
	return errors.New("the watch ended")
}

// maxWatchLine bounds one change's line, as the client's watch does.
const maxWatchLine = 8 << 20

// watchLine is a line of the task group watch, with what a light node reads of it.
type watchLine struct {
	Type   string `json:"type"`
	Object tgView `json:"object"`
}

// tgView is what a light node reads of a task group (the JSON names of v4.TaskGroup).
type tgView struct {
	Metadata struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Node     string `json:"node"`
		Desired  string `json:"desired"`
		Template struct {
			Spec struct {
				Processes []struct {
					ProcName string `json:"procName"`
				} `json:"processes"`
				Containers []struct {
					Name string `json:"name"`
				} `json:"containers"`
			} `json:"spec"`
		} `json:"template"`
		// Step is a workflow step's I/O: the node reports what it "collected".
		Step *v4.StepIO `json:"step"`
	} `json:"spec"`
	Status struct {
		Phase string `json:"phase"`
	} `json:"status"`
}

// viewOf is what a light node reads of a listed task group.
func viewOf(tg *v4.TaskGroup) tgView {
	var v tgView
	v.Metadata.Namespace, v.Metadata.Name = tg.Metadata.Namespace, tg.Metadata.Name
	v.Spec.Node, v.Spec.Desired, v.Status.Phase = tg.Spec.Node, tg.Spec.Desired, tg.Status.Phase
	v.Spec.Step = tg.Spec.Step
	for _, p := range tg.Spec.Template.Spec.Processes {
		v.Spec.Template.Spec.Processes = append(v.Spec.Template.Spec.Processes, struct {
			ProcName string `json:"procName"`
		}{p.ProcName})
	}
	for _, c := range tg.Spec.Template.Spec.Containers {
		v.Spec.Template.Spec.Containers = append(v.Spec.Template.Spec.Containers, struct {
			Name string `json:"name"`
		}{c.Name})
	}
	return v
}

func (v *tgView) key() string { return tgKey(v.Metadata.Namespace, v.Metadata.Name) }

// taskNames are the task group's tasks, as the executor names them in its status.
func (v *tgView) taskNames() []string {
	spec := &v.Spec.Template.Spec
	names := make([]string, 0, len(spec.Processes)+len(spec.Containers))
	for _, p := range spec.Processes {
		names = append(names, p.ProcName)
	}
	for _, c := range spec.Containers {
		names = append(names, c.Name)
	}
	return names
}

// handle takes a task group the server binds to this node: a new one starts (Running
// after the start delay), one to stop is reported Killed. The node's own reports come
// back as changes and change nothing.
func (n *lightNode) handle(tg tgView) {
	key := tg.key()
	n.mu.Lock()
	defer n.mu.Unlock()
	t, known := n.tgs[key]
	if tg.Spec.Desired == v4.DesiredStopped {
		if known && t.ended || !known && isTerminal(tg.Status.Phase) {
			return
		}
		if !known {
			t = &simTaskGroup{ns: tg.Metadata.Namespace, name: tg.Metadata.Name, names: tg.taskNames(), step: tg.Spec.Step}
			t.status = runningStatus(n.name, n.s.ip, t.names, time.Now())
			n.tgs[key] = t
		}
		n.endLocked(t, v4.StatusKilled, "killed: the task group is to stop", 137)
		return
	}
	if known {
		return
	}
	t = &simTaskGroup{ns: tg.Metadata.Namespace, name: tg.Metadata.Name, names: tg.taskNames(), step: tg.Spec.Step}
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
	st := endedStatus(t.status, phase, msg, code, time.Now())
	st.Step = simStepResult(t.step, code)
	n.setLocked(t, st)
}

// setLocked records t's new status and queues it for the server.
func (n *lightNode) setLocked(t *simTaskGroup, st v4.TaskGroupStatus) {
	t.status, t.started = st, true
	t.version++
	n.rep.status.Enqueue(t.ns, t.name, st)
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
	n.rep.status.Forget(t.ns, t.name)
}

// isTerminal reports whether phase is one a task group's tasks do not leave: a final
// status, or Lost (its node was lost: the server moved it on).
func isTerminal(phase string) bool {
	return v4.Terminal(phase) || phase == v4.StatusLost
}
