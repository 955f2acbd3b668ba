package scheduler

import (
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// Busy ports (docs/scheduling.md, "Busy ports"): host ports that programs other than
// berth's tasks hold on a node, as its agent reports them (status.busyPorts), and the
// ports a request was told a start found taken (Request.TakenPorts). Neither is given
// out as a random port; a fixed port among them makes the node infeasible.

// busyPort is one busy port of a node: the transports it is held on, and its holder.
type busyPort struct {
	tcp, udp bool
	holder   string // the program's name, when the agent looked it up
}

// busyPortsOf indexes a node's reported busy ports. The map is built anew whenever the
// node changes and never written after, so clones of the snapshot share it.
func busyPortsOf(ports []v4.BusyPort) map[int]busyPort {
	if len(ports) == 0 {
		return nil
	}
	out := make(map[int]busyPort, len(ports))
	for _, p := range ports {
		b := out[p.Port]
		if p.Protocol == "udp" {
			b.udp = true
		} else {
			b.tcp = true
		}
		if b.holder == "" {
			b.holder = holderName(p.Holder)
		}
		out[p.Port] = b
	}
	return out
}

// holderName drops the pid from "nginx (pid 812)": reasons are counted over nodes by
// their words, and the program's name is what tells an operator what is in the way.
func holderName(h string) string {
	name, _, _ := strings.Cut(h, " (pid ")
	return name
}

// busyFixed says why fixed port p cannot be had on n, "" when nothing but berth's own
// accounting (fitsPorts) stands in its way.
func (st *reqState) busyFixed(n *nodeState, p v4.AllocatedPort) string {
	if st.taken(n, p.HostPort) {
		return "port " + strconv.Itoa(p.HostPort) + " taken at the last start"
	}
	b, ok := n.busy[p.HostPort]
	if !ok || (v4.Transport(p.Protocol) == "udp" && !b.udp) || (v4.Transport(p.Protocol) == "tcp" && !b.tcp) {
		return ""
	}
	who := "another program"
	if b.holder != "" {
		who = b.holder
	}
	return "port " + strconv.Itoa(p.HostPort) + "/" + v4.Transport(p.Protocol) + " held by " + who
}

// taken reports a port the request must not get on n although n reports it free.
func (st *reqState) taken(n *nodeState, port int) bool {
	for _, p := range st.req.TakenPorts[n.name] {
		if p == port {
			return true
		}
	}
	return false
}

// randomFree reports whether port p of n's ranges may be given out as a random port: no
// task group holds it, no other program does (on either transport: a random port is
// chosen before its protocol matters to anyone), and the request does not hold it fixed
// or know it taken.
func (st *reqState) randomFree(n *nodeState, p int) bool {
	if n.ports[p] != 0 || st.fixedPort(p) {
		return false
	}
	if _, busy := n.busy[p]; busy {
		return false
	}
	return len(st.req.TakenPorts) == 0 || !st.taken(n, p)
}

// busyInRanges counts the busy ports of n's ranges, for the reason of a full range.
func busyInRanges(n *nodeState) int {
	c := 0
	for p := range n.busy {
		for _, r := range n.ranges {
			if p >= r.Begin && p <= r.End {
				c++
				break
			}
		}
	}
	return c
}
