package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/berthhq/berth/test/berthtest"
)

// testLAN is a network of the test's own on which each node has an address of its own:
// a bridge in a network namespace of its own (outside the host's firewall, whose
// forwarding policy Docker sets to drop), the host on it at .1, and each node a network
// namespace at .N, its default route through the host. Only addresses the test made.
type testLAN struct {
	t      *testing.T
	tag    string
	sw     string // the bridge's namespace
	prefix string // the /24's first three bytes, "10.211.0."
	hostIP string
}

// newTestLAN makes the bridge and puts the host on it; all is removed when the test
// ends.
func newTestLAN(t *testing.T) *testLAN {
	t.Helper()
	requireRoot(t)
	if _, err := exec.LookPath("ip"); err != nil {
		if os.Getenv("BERTH_REQUIRE_NFT") == "1" {
			t.Fatal("this test needs ip (iproute2) and BERTH_REQUIRE_NFT=1 is set")
		}
		t.Skip("this test needs ip (iproute2)")
	}
	l := &testLAN{t: t, tag: fmt.Sprint(os.Getpid() % 100000), prefix: "10.211.0."}
	l.hostIP = l.prefix + "1"
	l.sw = "be2e-sw-" + l.tag
	l.ip("netns", "add", l.sw)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", l.sw).Run() })
	l.ip("-n", l.sw, "link", "add", "br0", "type", "bridge")
	l.ip("-n", l.sw, "link", "set", "br0", "up")
	l.plug("", l.hostIP, "be"+l.tag+"h")
	return l
}

// ip runs ip with args, failing the test on an error.
func (l *testLAN) ip(args ...string) {
	l.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		l.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// plug joins namespace ns ("" for the host's) to the bridge at addr/24 through a veth
// pair whose end in ns is named ifname.
func (l *testLAN) plug(ns, addr, ifname string) {
	l.t.Helper()
	peer := ifname + "p"
	l.ip("link", "add", ifname, "type", "veth", "peer", "name", peer, "netns", l.sw)
	in := []string{}
	if ns != "" {
		l.ip("link", "set", ifname, "netns", ns)
		in = []string{"-n", ns}
	} else {
		l.t.Cleanup(func() { exec.Command("ip", "link", "del", ifname).Run() })
	}
	l.ip("-n", l.sw, "link", "set", peer, "master", "br0")
	l.ip("-n", l.sw, "link", "set", peer, "up")
	l.ip(append(in, "addr", "add", addr+"/24", "dev", ifname)...)
	l.ip(append(in, "link", "set", ifname, "up")...)
	if ns != "" {
		l.ip(append(in, "link", "set", "lo", "up")...)
		// A VIP needs a route, as on any node: the default route.
		l.ip(append(in, "route", "add", "default", "via", l.hostIP)...)
	}
}

// node makes the network namespace of node n, at PREFIX.n, and returns its name and
// address.
func (l *testLAN) node(n int) (ns, addr string) {
	l.t.Helper()
	ns, addr = fmt.Sprintf("be2e-%s-%d", l.tag, n), fmt.Sprintf("%s%d", l.prefix, n)
	l.ip("netns", "add", ns)
	l.t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	l.plug(ns, addr, fmt.Sprintf("be%s%d", l.tag, n))
	return ns, addr
}

// startAgentOn runs agent name as a node in namespace ns at addr, reaching server s
// on the LAN (startServerOnLAN), with the cluster DNS server on port 53 of addr and the
// service proxy on.
func startAgentOn(t *testing.T, s *devServer, ns, addr, name, ports string, extra ...string) *agentProc {
	t.Helper()
	return runAgent(t, s, &agentProc{name: name, netns: ns}, ports, append([]string{"--server", s.url,
		"--listen", addr + ":0", "--ip", addr, "--dns-addr", "auto", "--service-proxy", "on"}, extra...))
}

// startServerOnLAN runs `berth server` listening on the host's address on l (its
// certificate is valid there), with a join token.
func startServerOnLAN(t *testing.T, l *testLAN, dataDir string) *devServer {
	t.Helper()
	port := strings.TrimPrefix(berthtest.FreeAddr(t), "127.0.0.1:")
	return startBerthAt(t, berthBin, l.hostIP+":"+port, dataDir, "server", "--join-token", joinToken)
}
