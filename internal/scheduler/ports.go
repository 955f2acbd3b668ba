package scheduler

import (
	"fmt"
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
)

// fitsPorts checks that every fixed host port is free on n and that its ranges have
// enough free ports for the random ones.
func (st *reqState) fitsPorts(n *nodeState) (bool, string) {
	for _, p := range st.req.FixedPorts {
		if n.ports[p.HostPort] > 0 {
			return false, "port " + strconv.Itoa(p.HostPort) + " in use"
		}
		if why := st.busyFixed(n, p); why != "" {
			return false, why
		}
	}
	if want := len(st.req.RandomPorts); want > 0 && len(st.randomPorts(n, want)) < want {
		why := "no free port in " + rangesString(n.ranges)
		if b := busyInRanges(n); b > 0 {
			why += " (" + strconv.Itoa(b) + " held by other programs)"
		}
		return false, why
	}
	return true, ""
}

// randomPorts returns up to want free ports of n's ranges, lowest first (as BCS took them
// from the offer), skipping the request's own fixed ports.
func (st *reqState) randomPorts(n *nodeState, want int) []int {
	out := make([]int, 0, want)
	for _, r := range n.ranges {
		for p := r.Begin; p <= r.End && len(out) < want; p++ {
			if st.randomFree(n, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

func (st *reqState) fixedPort(p int) bool {
	for _, f := range st.req.FixedPorts {
		if f.HostPort == p {
			return true
		}
	}
	return false
}

// allocatePorts picks the host ports of a task group placed on n (random ones marked
// so, which a run that finds one taken is placed again for), and the busy ports of n the
// random choice passed over (Placement.PassedOver).
func (st *reqState) allocatePorts(n *nodeState) ([]v4.AllocatedPort, []int) {
	if len(st.req.FixedPorts)+len(st.req.RandomPorts) == 0 {
		return nil, nil
	}
	out := append([]v4.AllocatedPort(nil), st.req.FixedPorts...)
	random := st.randomPorts(n, len(st.req.RandomPorts))
	for i, p := range st.req.RandomPorts {
		p.HostPort, p.Random = random[i], true
		out = append(out, p)
	}
	var passed []int
	if len(random) > 0 && (len(n.busy) > 0 || len(st.req.TakenPorts) > 0) {
		passed = st.passedOver(n, random[len(random)-1])
	}
	return out, passed
}

// maxPassedOver bounds the busy ports a placement lists.
const maxPassedOver = 16

// passedOver lists the ports of n's ranges up to last that were skipped because another
// program holds them (or a start found them taken), lowest first.
func (st *reqState) passedOver(n *nodeState, last int) []int {
	var out []int
	for _, r := range n.ranges {
		for p := r.Begin; p <= r.End && p <= last && len(out) < maxPassedOver; p++ {
			if _, busy := n.busy[p]; busy || st.taken(n, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

func rangesString(rs []v4.PortRange) string {
	s := ""
	for i, r := range rs {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf("%d-%d", r.Begin, r.End)
	}
	return s
}
