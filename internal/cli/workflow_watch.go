package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// Watching a workflow: its object and its nodes (the nodes route, a page at a time) are
// read every interval, never faster than minWatchInterval, and drawn. On a terminal the
// tree is drawn again in place; otherwise each change of a node's phase is one appended
// line, and the tree is printed once at the end.

const (
	minWatchInterval = 100 * time.Millisecond
	// watchNodePage is the page of nodes asked for while watching.
	watchNodePage = 1000
	// maxWatchFailures is how many reads in a row may fail before the watch gives up.
	maxWatchFailures = 10
)

// wfSnapshot is one read of a workflow and its nodes.
type wfSnapshot struct {
	wf    *v4.Workflow
	nodes []v4.WfNodeStatus
}

// readWorkflow reads the workflow and every node. A server without the nodes route (404)
// has them all in the object.
func readWorkflow(ctx context.Context, c *client.Client, ns, name string) (*wfSnapshot, error) {
	obj, err := c.Get(ctx, v4.KindWorkflow, ns, name)
	if err != nil {
		return nil, err
	}
	wf, ok := obj.(*v4.Workflow)
	if !ok {
		return nil, fmt.Errorf("workflow %s: the server answered a %s", name, obj.GetKind())
	}
	nodes, err := c.AllWorkflowNodes(ctx, ns, name, watchNodePage)
	if client.IsNotFound(err) {
		nodes, err = inlineNodes(wf), nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the nodes of workflow %s: %w", name, err)
	}
	return &wfSnapshot{wf: wf, nodes: nodes}, nil
}

func inlineNodes(wf *v4.Workflow) []v4.WfNodeStatus {
	out := make([]v4.WfNodeStatus, 0, len(wf.Status.Nodes))
	for id, n := range wf.Status.Nodes {
		if n.ID == "" {
			n.ID = id
		}
		out = append(out, n)
	}
	return out
}

// frame is what a snapshot draws: a summary line, the workflow's message, the tree.
func (s *wfSnapshot) frame(now time.Time, colour bool, maxLines int) []string {
	st := s.wf.Status
	head := fmt.Sprintf("%s  %s  %s  %s", s.wf.Metadata.Name, phaseSymbol(st.Phase, colour)+" "+orNone(st.Phase),
		wfProgress(s.nodes), nodeDuration(st.StartedAt, st.FinishedAt, now))
	lines := []string{strings.TrimRight(head, " ")}
	if st.Message != "" {
		lines = append(lines, "message: "+oneLine(st.Message))
	}
	if maxLines > 0 {
		maxLines -= len(lines)
	}
	return append(lines, renderTree(newWfTree(s.nodes).rows(now, colour), maxLines)...)
}

// watcher draws a workflow's snapshots to w.
type watcher struct {
	w       io.Writer
	tty     bool
	height  int // the terminal's rows: a frame taller cannot be redrawn in place
	now     func() time.Time
	drawn   int               // lines of the last frame (tty)
	last    string            // the last frame (tty): an unchanged one is not drawn
	phases  map[string]string // node ID → phase last printed (plain)
	wfPhase string
}

func (wt *watcher) draw(s *wfSnapshot) {
	if wt.tty {
		lines := s.frame(wt.now(), true, max(wt.height-1, 5))
		text := strings.Join(lines, "\n") + "\n"
		if text == wt.last {
			return
		}
		if wt.drawn > 0 {
			fmt.Fprintf(wt.w, "\x1b[%dA\x1b[J", wt.drawn) // up to the frame's top, clear below
		}
		io.WriteString(wt.w, text)
		wt.drawn, wt.last = len(lines), text
		return
	}
	wt.appendChanges(s)
}

// appendChanges prints a line for the workflow's phase and each node's when it changed.
func (wt *watcher) appendChanges(s *wfSnapshot) {
	if wt.phases == nil {
		wt.phases = map[string]string{}
	}
	ts := wt.now().UTC().Format(time.TimeOnly)
	if p := s.wf.Status.Phase; p != wt.wfPhase {
		wt.wfPhase = p
		fmt.Fprintf(wt.w, "%s workflow %s %s %s\n", ts, s.wf.Metadata.Name, orNone(p), wfProgress(s.nodes))
	}
	t := newWfTree(s.nodes)
	for _, id := range t.order() {
		n := t.nodes[id]
		if n.Phase == "" || wt.phases[id] == n.Phase || n.Type == v4.WfNodeStepGroup {
			continue
		}
		wt.phases[id] = n.Phase
		line := fmt.Sprintf("%s %s %s %s", ts, n.Name, n.Phase, nodeDuration(n.StartedAt, n.FinishedAt, wt.now()))
		if n.Message != "" && (n.Phase == v4.WfFailed || n.Phase == v4.WfError) {
			line += ": " + oneLine(n.Message)
		}
		fmt.Fprintln(wt.w, strings.TrimRight(line, " "))
	}
}

// order is every node, depth first in tree order.
func (t *wfTree) order() []string {
	out := make([]string, 0, len(t.nodes))
	seen := map[string]bool{}
	var walk func(string)
	walk = func(id string) {
		if seen[id] {
			return
		}
		seen[id] = true
		out = append(out, id)
		for _, c := range t.children[id] {
			walk(c)
		}
	}
	for _, r := range t.roots {
		walk(r)
	}
	return out
}

// watchWorkflow draws workflow ns/name until it finishes or ctx ends, and answers its
// last phase. Failed reads are retried, maxWatchFailures in a row at most.
func (o *options) watchWorkflow(ctx context.Context, c *client.Client, ns, name string, interval time.Duration) (string, error) {
	interval = max(interval, minWatchInterval)
	wt := &watcher{w: o.out(), now: o.env.now, height: 40}
	if f, ok := o.env.stdout.(*os.File); ok && isTerminal(f) {
		wt.tty = true
		if sizes, stop := watchSize(f); sizes != nil {
			select {
			case sz := <-sizes:
				wt.height = int(sz.Rows)
			default:
			}
			stop()
		}
	}
	failures := 0
	for {
		rctx, cancel := o.requestContextFrom(ctx)
		s, err := readWorkflow(rctx, c, ns, name)
		cancel()
		switch {
		case err == nil:
			failures = 0
			wt.draw(s)
			if v4.WfPhaseFinished(s.wf.Status.Phase) {
				if !wt.tty {
					fmt.Fprintln(wt.w)
					for _, l := range s.frame(wt.now(), false, 0) {
						fmt.Fprintln(wt.w, l)
					}
				}
				return s.wf.Status.Phase, nil
			}
		case ctx.Err() != nil:
			return "", ctx.Err()
		case client.IsNotFound(err):
			return "", err
		default:
			if failures++; failures >= maxWatchFailures {
				return "", fmt.Errorf("watch workflow %s: %d reads failed in a row: %w", name, failures, err)
			}
			fmt.Fprintf(o.env.stderr, "warning: %v (trying again)\n", err)
		}
		// A big workflow is read less often: 10,000 nodes at most every 2 s.
		wait := interval
		if s != nil {
			wait = max(interval, time.Duration(len(s.nodes))*200*time.Microsecond)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(wait):
		}
	}
}

// requestContextFrom bounds one request made under ctx with --request-timeout.
func (o *options) requestContextFrom(ctx context.Context) (context.Context, context.CancelFunc) {
	if o.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, o.timeout)
}
