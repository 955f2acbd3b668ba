package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// sleeperSpec is a process of instances that sleep, with one http port: hostPort 0 for a
// random one, else that fixed port.
func sleeperSpec(name string, instances, hostPort int) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"process","metadata":{"name":%q,"namespace":"e2e-busy"},
	"restartPolicy":{"policy":"Never"},"killPolicy":{"gracePeriod":1},
	"spec":{"instance":%d,"template":{"spec":{"processes":[{"procName":"sleep","startCmd":"exec sleep 100000","startGracePeriod":1,
		"ports":[{"name":"http","hostPort":%d,"protocol":"http"}],"resources":{"limits":{"cpu":"0.1","memory":"32"}}}]}}}}`,
		name, instances, hostPort)
}

// holdPort listens on port (tcp or udp, every address) for the test's whole life, as
// another program of the node would; it reports false when the port is not free.
func holdPort(t *testing.T, proto string, port int) bool {
	t.Helper()
	addr := ":" + strconv.Itoa(port)
	if proto == "udp" {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return false
		}
		t.Cleanup(func() { pc.Close() })
		return true
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	t.Cleanup(func() { ln.Close() })
	return true
}

// busyRange finds six free ports in a row (below the kernel's ephemeral range and the
// other tests' bands) and holds the first on tcp and the second on udp.
func busyRange(t *testing.T) int {
	t.Helper()
	for range 50 {
		base := 27000 + rand.IntN(900)
		free := true
		for p := base; p < base+6 && free; p++ {
			free = portFree("tcp", p) && portFree("udp", p)
		}
		if free && holdPort(t, "tcp", base) && holdPort(t, "udp", base+1) {
			return base
		}
	}
	t.Fatal("no six free ports in a row in 27000-27905")
	return 0
}

func portFree(proto string, port int) bool {
	addr := ":" + strconv.Itoa(port)
	if proto == "udp" {
		pc, err := net.ListenPacket("udp", addr)
		if err == nil {
			pc.Close()
		}
		return err == nil
	}
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		ln.Close()
	}
	return err == nil
}

// nodeBusyPorts is the node's status.busyPorts (none before it registered).
func (s *devServer) nodeBusyPorts(node string) []v4.BusyPort {
	s.t.Helper()
	r := s.berth("", "get", "node", node, "-o", "json")
	var n v4.Node
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &n) != nil {
		return nil
	}
	return n.Status.BusyPorts
}

// Ports of berth dev's --port-range that another program (this test) holds are reported
// in the node's status and never given to random ports: a process of random ports runs
// on free ones, also when a port is taken after the node last reported (its start finds
// it taken and it is placed again on another). A fixed port another program holds fails
// the task group with a message naming the port and its holder.
func TestBusyHostPortsAreAvoided(t *testing.T) {
	requireRoot(t)
	base := busyRange(t)
	s := startDev(t, t.TempDir(), "--node-name", "busy", "--port-range", fmt.Sprintf("%d-%d", base, base+5))
	s.cleanupProcesses("e2e-busy")
	waitUntil(t, 30*time.Second, "the held ports in the node's busy ports", func() bool {
		got := s.nodeBusyPorts("busy")
		return slices.Equal(got, []v4.BusyPort{{Port: base, Protocol: "tcp"}, {Port: base + 1, Protocol: "udp"}})
	})
	// Taken after the node's last report: the scheduler may still hand it out.
	if !holdPort(t, "tcp", base+2) {
		t.Fatalf("port %d is no longer free", base+2)
	}
	s.applySpec(t, sleeperSpec("avoid", 2, 0))
	tgs := s.running(t, "e2e-busy", "avoid", 2)
	var got []int
	for _, tg := range tgs {
		got = append(got, port(tg, "http"))
	}
	slices.Sort(got)
	for _, p := range got {
		if p < base+3 || p > base+5 {
			t.Errorf("instances run on ports %v; %d-%d are held by the test, only %d-%d are free", got, base, base+2, base+3, base+5)
		}
	}
	for _, tg := range tgs {
		if tg.Spec.PortRetries > 0 {
			t.Logf("instance %d was placed again %d time(s) after its port was found taken", tg.Spec.Index, tg.Spec.PortRetries)
		}
		if tg.Spec.ReschedTimes != 0 || tg.Spec.CrashLoops != 0 {
			t.Errorf("instance %d: reschedTimes %d crashLoops %d; a taken port is no restart", tg.Spec.Index, tg.Spec.ReschedTimes, tg.Spec.CrashLoops)
		}
	}
	waitUntil(t, 30*time.Second, "the port taken late in the node's busy ports", func() bool {
		return slices.ContainsFunc(s.nodeBusyPorts("busy"), func(b v4.BusyPort) bool { return b.Port == base+2 })
	})

	// A fixed port outside the range, held by the test: the start finds it taken.
	fixed := 0
	for p := base + 10; p < base+100; p++ {
		if portFree("tcp", p) && holdPort(t, "tcp", p) {
			fixed = p
			break
		}
	}
	if fixed == 0 {
		t.Fatal("no free port for the fixed one")
	}
	s.applySpec(t, sleeperSpec("fixed", 1, fixed))
	want := fmt.Sprintf("host port %d/tcp is in use by e2e.test", fixed)
	var failed *v4.TaskGroup
	waitUntil(t, 60*time.Second, "the fixed-port instance Failed", func() bool {
		for _, tg := range s.taskGroups("e2e-busy", "fixed") {
			if tg.Status.Phase == v4.StatusFailed {
				failed = tg
				return true
			}
		}
		return false
	})
	if !strings.Contains(failed.Status.Message, want) || failed.Status.Reason != v4.ReasonPortConflict {
		t.Errorf("fixed-port instance: reason %q message %q, want one containing %q", failed.Status.Reason, failed.Status.Message, want)
	}
	waitUntil(t, 30*time.Second, "the fixed port and its holder in the node's busy ports", func() bool {
		return slices.ContainsFunc(s.nodeBusyPorts("busy"), func(b v4.BusyPort) bool {
			return b.Port == fixed && strings.HasPrefix(b.Holder, "e2e.test (pid ")
		})
	})
	// A plan for another instance of it says why this node cannot take it.
	plan := s.berth(sleeperSpec("fixed2", 1, fixed), "plan", "-f", "-")
	if !strings.Contains(plan.stdout+plan.stderr, fmt.Sprintf("port %d/tcp held by e2e.test", fixed)) {
		t.Errorf("berth plan: %s%s", plan.stdout, plan.stderr)
	}
}
