package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// treeNodes is a DAG workflow: a prepare step, a loop of items (item 3 failed, items 20
// and up still running) and an exit handler.
func treeNodes(items int) []v4.WfNodeStatus {
	at := func(m int) time.Time { return testNow.Add(time.Duration(m-10) * time.Minute) }
	nodes := []v4.WfNodeStatus{
		{ID: "r", Name: "pipe", DisplayName: "pipe", Type: v4.WfNodeDAG, Phase: v4.WfRunning, StartedAt: at(0), Children: []string{"p", "loop"}},
		{ID: "p", Name: "pipe.prepare", DisplayName: "prepare", Type: v4.WfNodePod, Phase: v4.WfSucceeded, BoundaryID: "r", StartedAt: at(0), FinishedAt: at(1)},
		{ID: "loop", Name: "pipe.train", DisplayName: "train", Type: v4.WfNodeTaskGroup, Phase: v4.WfRunning, BoundaryID: "r", StartedAt: at(1)},
		{ID: "x", Name: "pipe.onExit", DisplayName: "pipe.onExit", Type: v4.WfNodePod, Phase: v4.WfPending, StartedAt: at(5)},
	}
	for i := range items {
		n := v4.WfNodeStatus{ID: fmt.Sprintf("t%03d", i), Name: fmt.Sprintf("pipe.train(%d)", i), DisplayName: fmt.Sprintf("train(%d)", i),
			Type: v4.WfNodePod, Phase: v4.WfSucceeded, BoundaryID: "r", StartedAt: at(1), FinishedAt: at(2)}
		switch {
		case i == 3:
			n.Phase, n.Message = v4.WfFailed, "exit code 2:\n\x1b[31mout of \u009b2Jmemory"
		case i >= 20:
			n.Phase, n.FinishedAt = v4.WfRunning, time.Time{}
		}
		nodes[2].Children = append(nodes[2].Children, n.ID)
		nodes = append(nodes, n)
	}
	return nodes
}

func TestWorkflowTree(t *testing.T) {
	got := strings.Join(renderTree(newWfTree(treeNodes(4)).rows(testNow, false), 0), "\n")
	for _, line := range []string{
		"STEP", "● pipe", "├─ ✔ prepare", "└─ ● train (taskgroup)", "   ├─ ✔ train(0)", "   └─ ✖ train(3)",
		"exit code 2: [31mout of 2Jmemory", "◷ pipe.onExit",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("tree lacks %q:\n%s", line, got)
		}
	}
	if strings.Contains(got, "\x1b") || strings.Contains(got, "\u009b") {
		t.Errorf("a message's escape sequence reached the tree:\n%q", got)
	}
	lines := strings.Split(got, "\n")
	col := strings.Index(lines[0], "DURATION")
	for _, l := range lines[1:] {
		if r := []rune(l); len(r) > col && r[col-1] != ' ' {
			t.Errorf("the duration column is not aligned at %d: %q", col, l)
		}
	}
}

// TestWorkflowTreeCollapses: a loop of 500 items draws at most maxTreeChildren of them,
// those running or failed first, and counts the rest by phase; the page stays short.
func TestWorkflowTreeCollapses(t *testing.T) {
	lines := renderTree(newWfTree(treeNodes(500)).rows(testNow, false), 0)
	got := strings.Join(lines, "\n")
	if len(lines) > maxTreeChildren+8 {
		t.Errorf("%d lines for a loop of 500", len(lines))
	}
	wantContains(t, got, "✖ train(3)", "● train(20)", "more not shown (", "Running", "Succeeded)")
	if strings.Contains(got, "train(0)") {
		t.Errorf("a succeeded item was drawn before the running ones:\n%s", got)
	}
	short := renderTree(newWfTree(treeNodes(500)).rows(testNow, false), 10)
	if len(short) != 10 || !strings.HasPrefix(short[9], "… ") {
		t.Errorf("bounded to 10 lines: %d\n%s", len(short), strings.Join(short, "\n"))
	}
}

// TestWorkflowTreeBadLinks: nodes that list each other, or themselves, are drawn once
// each and the walk ends.
func TestWorkflowTreeBadLinks(t *testing.T) {
	nodes := []v4.WfNodeStatus{
		{ID: "a", Name: "a", Type: v4.WfNodeSteps, Children: []string{"b", "a", "gone"}},
		{ID: "b", Name: "b", Type: v4.WfNodeSteps, Children: []string{"a"}, BoundaryID: "b"},
		{ID: "c", Name: "c", Type: v4.WfNodePod, BoundaryID: "c"},
	}
	lines := renderTree(newWfTree(nodes).rows(testNow, false), 0)
	if len(lines) != 4 {
		t.Errorf("%d lines, want a header and 3 nodes:\n%s", len(lines), strings.Join(lines, "\n"))
	}
}

// TestWatcherRedraws: on a terminal a changed frame is drawn over the last one (cursor
// up by its lines, clear) and an unchanged one is not drawn; otherwise each phase change
// is one appended line.
func TestWatcherRedraws(t *testing.T) {
	wf := &v4.Workflow{Metadata: v4.ObjectMeta{Name: "pipe"}, Status: v4.WorkflowStatus{Phase: v4.WfRunning, StartedAt: testNow.Add(-time.Minute)}}
	nodes := treeNodes(2)
	var tty bytes.Buffer
	w := &watcher{w: &tty, tty: true, height: 40, now: func() time.Time { return testNow }}
	w.draw(&wfSnapshot{wf: wf, nodes: nodes})
	first := tty.Len()
	w.draw(&wfSnapshot{wf: wf, nodes: nodes})
	if tty.Len() != first {
		t.Errorf("an unchanged frame was drawn again")
	}
	done := *wf
	done.Status.Phase = v4.WfSucceeded
	w.draw(&wfSnapshot{wf: &done, nodes: nodes})
	frames := tty.String()
	if !strings.Contains(frames[first:], fmt.Sprintf("\x1b[%dA\x1b[J", strings.Count(frames[:first], "\n"))) {
		t.Errorf("the second frame does not draw over the first:\n%q", frames[first:])
	}
	if !strings.Contains(frames, "\x1b[32m✔\x1b[0m") {
		t.Errorf("no colour on a terminal:\n%q", frames)
	}

	var plain bytes.Buffer
	p := &watcher{w: &plain, now: func() time.Time { return testNow }}
	p.draw(&wfSnapshot{wf: wf, nodes: nodes})
	p.draw(&wfSnapshot{wf: wf, nodes: nodes})
	p.draw(&wfSnapshot{wf: &done, nodes: nodes})
	got := plain.String()
	wantContains(t, got, "12:00:00 workflow pipe Running 3/4\n", "pipe.prepare Succeeded 60s\n", "12:00:00 workflow pipe Succeeded 3/4\n")
	if strings.Count(got, "pipe.prepare") != 1 || strings.Contains(got, "\x1b") {
		t.Errorf("plain lines repeat a node or hold colours:\n%s", got)
	}
}
