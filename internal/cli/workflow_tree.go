package cli

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// The tree of a workflow's nodes as `berth submit --watch` and `berth workflow get` draw
// it: each node under its parent (the node that lists it among its children, else its
// steps or dag boundary), a phase symbol, its duration and, for a node that failed, its
// message.

// maxTreeChildren bounds the children drawn under one node: a loop of thousands of items
// shows those still running or failed first, then a line counting the rest by phase.
const maxTreeChildren = 20

// wfTree indexes a workflow's nodes by ID with their children in order.
type wfTree struct {
	nodes    map[string]v4.WfNodeStatus
	children map[string][]string
	roots    []string
}

func newWfTree(nodes []v4.WfNodeStatus) *wfTree {
	t := &wfTree{nodes: make(map[string]v4.WfNodeStatus, len(nodes)), children: map[string][]string{}}
	for _, n := range nodes {
		t.nodes[n.ID] = n
	}
	parent := map[string]string{}
	for _, id := range slices.Sorted(maps.Keys(t.nodes)) {
		for _, c := range t.nodes[id].Children {
			if _, ok := t.nodes[c]; ok && c != id && parent[c] == "" {
				parent[c] = id
				t.children[id] = append(t.children[id], c)
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(t.nodes)) {
		n := t.nodes[id]
		if parent[id] != "" {
			continue
		}
		if b, ok := t.nodes[n.BoundaryID]; ok && b.ID != id && !t.under(b.ID, id, parent) {
			parent[id] = b.ID
			t.children[b.ID] = append(t.children[b.ID], id)
			continue
		}
		t.roots = append(t.roots, id)
	}
	// Children attached by boundary come after those listed; roots go by start (the
	// workflow's own node, then its exit handler).
	slices.SortStableFunc(t.roots, func(a, b string) int { return t.byStart(a, b) })
	// Nodes that only list each other reach no root: each such ring is drawn from its
	// first node, so every node is drawn.
	seen := map[string]bool{}
	for _, id := range t.order() {
		seen[id] = true
	}
	for _, id := range slices.Sorted(maps.Keys(t.nodes)) {
		if !seen[id] {
			t.roots = append(t.roots, id)
			for _, r := range t.order() {
				seen[r] = true
			}
		}
	}
	return t
}

// under reports whether id is anc or below it, following parent: attaching anc under id
// would then make a cycle.
func (t *wfTree) under(id, anc string, parent map[string]string) bool {
	for i := 0; id != "" && i <= len(t.nodes); i++ {
		if id == anc {
			return true
		}
		id = parent[id]
	}
	return false
}

func (t *wfTree) byStart(a, b string) int {
	na, nb := t.nodes[a], t.nodes[b]
	if c := na.StartedAt.Compare(nb.StartedAt); c != 0 && !na.StartedAt.IsZero() && !nb.StartedAt.IsZero() {
		return c
	}
	return cmp.Compare(na.Name, nb.Name)
}

// progress counts the Pod nodes finished and made: "7/12".
func wfProgress(nodes []v4.WfNodeStatus) string {
	done, all := 0, 0
	for _, n := range nodes {
		if n.Type != v4.WfNodePod {
			continue
		}
		all++
		if v4.WfPhaseFinished(n.Phase) {
			done++
		}
	}
	return fmt.Sprintf("%d/%d", done, all)
}

// nodeDuration is how long a node ran: to its end, or to now while it runs.
func nodeDuration(start, end, now time.Time) string {
	if start.IsZero() {
		return ""
	}
	if end.IsZero() {
		end = now
	}
	return humanDuration(end.Sub(start))
}

// phaseSymbols and phaseColours draw a node's phase (colours only on a terminal).
var phaseSymbols = map[string]string{
	v4.WfPending: "◷", v4.WfRunning: "●", v4.WfSucceeded: "✔", v4.WfFailed: "✖",
	v4.WfError: "⚠", v4.WfSkipped: "○", v4.WfOmitted: "○",
}

var phaseColours = map[string]string{
	v4.WfPending: "\x1b[33m", v4.WfRunning: "\x1b[36m", v4.WfSucceeded: "\x1b[32m", v4.WfFailed: "\x1b[31m",
	v4.WfError: "\x1b[31m", v4.WfSkipped: "\x1b[90m", v4.WfOmitted: "\x1b[90m",
}

func phaseSymbol(phase string, colour bool) string {
	s, ok := phaseSymbols[phase]
	if !ok {
		s = "?"
	}
	if c, ok := phaseColours[phase]; ok && colour {
		return c + s + "\x1b[0m"
	}
	return s
}

// treeRow is one line of the tree before it is aligned.
type treeRow struct {
	prefix, symbol, name, phase, duration, message string
}

// rows walks the tree depth first. The walk is bounded by the node count: a node is
// drawn once even if the statuses were to link it twice.
func (t *wfTree) rows(now time.Time, colour bool) []treeRow {
	var out []treeRow
	seen := map[string]bool{}
	var walk func(id, prefix, lead string)
	walk = func(id, prefix, lead string) {
		if seen[id] {
			return
		}
		seen[id] = true
		n := t.nodes[id]
		name := oneLine(cmp.Or(n.DisplayName, n.Name)) // loop items name nodes: user text
		if n.Type == v4.WfNodeRetry || n.Type == v4.WfNodeTaskGroup || n.Attempt > 0 {
			name += fmt.Sprintf(" (%s)", strings.ToLower(n.Type))
		}
		r := treeRow{prefix: prefix + lead, symbol: phaseSymbol(n.Phase, colour), name: name, phase: n.Phase,
			duration: nodeDuration(n.StartedAt, n.FinishedAt, now)}
		if n.Phase == v4.WfFailed || n.Phase == v4.WfError || n.Type == v4.WfNodeSuspend {
			r.message = n.Message
		}
		out = append(out, r)
		shown, hidden := t.shownChildren(id)
		next := prefix
		switch lead {
		case "├─ ":
			next += "│  "
		case "└─ ":
			next += "   "
		}
		for i, c := range shown {
			l := "├─ "
			if i == len(shown)-1 && hidden == "" {
				l = "└─ "
			}
			walk(c, next, l)
		}
		if hidden != "" {
			out = append(out, treeRow{prefix: next + "└─ ", symbol: "…", name: hidden})
		}
	}
	for _, r := range t.roots {
		walk(r, "", "")
	}
	return out
}

// shownChildren are the children of id drawn, at most maxTreeChildren: those not done
// well (running, pending, failed) first, in order, then the others in order; and the
// line that counts the rest by phase ("" when all are shown).
func (t *wfTree) shownChildren(id string) ([]string, string) {
	all := t.children[id]
	if len(all) <= maxTreeChildren {
		return all, ""
	}
	quiet := func(c string) bool {
		p := t.nodes[c].Phase
		return p == v4.WfSucceeded || p == v4.WfSkipped || p == v4.WfOmitted
	}
	keep := map[string]bool{}
	for _, pass := range []bool{false, true} {
		for _, c := range all {
			if len(keep) < maxTreeChildren && quiet(c) == pass {
				keep[c] = true
			}
		}
	}
	var shown []string
	count := map[string]int{}
	for _, c := range all {
		if keep[c] {
			shown = append(shown, c)
		} else {
			count[cmp.Or(t.nodes[c].Phase, "Pending")]++
		}
	}
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(count)) {
		parts = append(parts, fmt.Sprintf("%d %s", count[p], p))
	}
	return shown, fmt.Sprintf("%d more not shown (%s)", len(all)-len(shown), strings.Join(parts, ", "))
}

// renderTree aligns the rows under a header: the tree, then the duration and message
// columns. Widths are counted in runes, so colour codes (around the symbol only) do not
// shift the columns.
func renderTree(rows []treeRow, maxLines int) []string {
	width := len("STEP")
	for _, r := range rows {
		width = max(width, len([]rune(r.prefix))+2+len([]rune(r.name)))
	}
	durW := len("DURATION")
	for _, r := range rows {
		durW = max(durW, len(r.duration))
	}
	pad := func(s string, w int) string { return s + strings.Repeat(" ", max(0, w-len([]rune(s)))) }
	out := []string{strings.TrimRight(pad("STEP", width)+"   "+pad("DURATION", durW)+"   MESSAGE", " ")}
	for i, r := range rows {
		if maxLines > 0 && len(out) >= maxLines-1 && i < len(rows)-1 {
			out = append(out, fmt.Sprintf("… %d more lines", len(rows)-i))
			break
		}
		tree := r.prefix + r.symbol + " " + r.name
		plain := len([]rune(r.prefix)) + 2 + len([]rune(r.name))
		line := tree + strings.Repeat(" ", max(0, width-plain)) + "   " + pad(r.duration, durW) + "   " + oneLine(r.message)
		out = append(out, strings.TrimRight(line, " "))
	}
	return out
}

// oneLine keeps a message on its line: a node's message is the workload's words.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f {
			return -1 // no escape sequence (nor an 8-bit CSI) of a message reaches the terminal
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 160 {
		return string(r[:159]) + "…"
	}
	return s
}
