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
	}
	if want := len(st.req.RandomPorts); want > 0 && len(st.randomPorts(n, want)) < want {
		return false, "no free port in " + rangesString(n.ranges)
	}
	return true, ""
}

// randomPorts returns up to want free ports of n's ranges, lowest first (as BCS took them
// from the offer), skipping the request's own fixed ports.
func (st *reqState) randomPorts(n *nodeState, want int) []int {
	out := make([]int, 0, want)
	for _, r := range n.ranges {
		for p := r.Begin; p <= r.End && len(out) < want; p++ {
			if n.ports[p] == 0 && !st.fixedPort(p) {
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

// allocatePorts picks the host ports of a task group placed on n.
func (st *reqState) allocatePorts(n *nodeState) []v4.AllocatedPort {
	if len(st.req.FixedPorts)+len(st.req.RandomPorts) == 0 {
		return nil
	}
	out := append([]v4.AllocatedPort(nil), st.req.FixedPorts...)
	random := st.randomPorts(n, len(st.req.RandomPorts))
	for i, p := range st.req.RandomPorts {
		p.HostPort = random[i]
		out = append(out, p)
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
