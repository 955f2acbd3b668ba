package scheduler

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Reason explains why instances fit nowhere: for each check, how many nodes it was the
// first to reject.
type Reason struct {
	Nodes  int          `json:"nodes"`
	Checks []CheckCount `json:"checks"`
}

// CheckCount is one check and the number of nodes it rejected.
type CheckCount struct {
	Check string `json:"check"`
	Nodes int    `json:"nodes"`
}

// String reads like "3,000 nodes: 1,800 failed constraint idc MAXPER 5, 1,150 insufficient memory".
func (r *Reason) String() string {
	if r.Nodes == 0 {
		return "no nodes"
	}
	parts := make([]string, 0, len(r.Checks))
	for _, c := range r.Checks {
		parts = append(parts, thousands(c.Nodes)+" "+c.Check)
	}
	noun := "nodes"
	if r.Nodes == 1 {
		noun = "node"
	}
	return fmt.Sprintf("%s %s: %s", thousands(r.Nodes), noun, strings.Join(parts, ", "))
}

// reasonCounter accumulates first-failing checks per node.
type reasonCounter struct {
	nodes  int
	counts map[string]int
}

func (c *reasonCounter) add(check string) {
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	c.counts[check]++
}

func (c *reasonCounter) reason() *Reason {
	r := &Reason{Nodes: c.nodes}
	for check, n := range c.counts {
		r.Checks = append(r.Checks, CheckCount{Check: check, Nodes: n})
	}
	slices.SortFunc(r.Checks, func(a, b CheckCount) int {
		if a.Nodes != b.Nodes {
			return b.Nodes - a.Nodes
		}
		return strings.Compare(a.Check, b.Check)
	})
	return r
}

// thousands writes n with comma separators (1800 -> "1,800").
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Kinds of checks, for metrics: each check's words belong to one (CheckKind).
const (
	CheckNode       = "node"       // not ready, disabled, not the node asked for
	CheckTaint      = "taint"      // a NoSchedule taint not tolerated
	CheckRuntime    = "runtime"    // the node does not offer the pod's container runtime
	CheckVolume     = "volume"     // a CSI volume the pod claims cannot be used there
	CheckConstraint = "constraint" // a constraint item failed
	CheckResources  = "resources"  // cpu, memory, disk or an extended resource
	CheckPorts      = "ports"      // a fixed port in use, no free random port
	CheckGPU        = "gpu"        // no card (or set of cards) takes the request
	CheckGroupBy    = "groupby"    // fits, but a GROUPBY's other groups come first
)

// CheckKind sorts a check's words (as Reason lists them) into one of the Check* kinds;
// the words are this package's own, so the sort is exact.
func CheckKind(check string) string {
	switch {
	case check == "node not ready" || check == "node disabled" || strings.HasPrefix(check, "not node "):
		return CheckNode
	case strings.HasPrefix(check, "taint "):
		return CheckTaint
	case strings.HasPrefix(check, "runtime "):
		return CheckRuntime
	case strings.HasPrefix(check, "volume "):
		return CheckVolume
	case strings.HasPrefix(check, "failed constraint "):
		return CheckConstraint
	case strings.HasPrefix(check, "insufficient "):
		return CheckResources
	case strings.HasPrefix(check, "port ") || strings.HasPrefix(check, "no free port"):
		return CheckPorts
	case strings.HasPrefix(check, "fits, but"):
		return CheckGroupBy
	}
	return CheckGPU // the GPU checks' words vary most: "no card ...", "no 2 free whole GPU cards", ...
}

// Main is the kind of check that rejected the most nodes ("" without checks).
func (r *Reason) Main() string {
	if r == nil || len(r.Checks) == 0 {
		return ""
	}
	return CheckKind(r.Checks[0].Check)
}
