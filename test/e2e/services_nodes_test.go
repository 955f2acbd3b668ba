package e2e

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// nslookupIn resolves name in network namespace ns, asking the DNS server at server,
// and returns the sorted addresses of the answer.
func nslookupIn(ns, server, name string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "busybox", "nslookup", name, server).CombinedOutput()
	return answerAddresses(string(out))
}

// answerAddresses reads the addresses of busybox nslookup's answer, sorted.
func answerAddresses(out string) []string {
	var ips []string
	for _, line := range strings.Split(out, "\n") {
		if ip, ok := strings.CutPrefix(line, "Address: "); ok {
			ips = append(ips, strings.TrimSpace(ip))
		}
	}
	slices.Sort(ips)
	return ips
}

// Services across nodes, each node an agent in a network namespace of its own with an
// address of its own: a client instance on one node resolves web.demo to the ready
// instances on both nodes, every node's DNS server answers the same, the client's node
// forwards the VIP to both, and an instance that fails its health check or is killed
// leaves the names and the VIP's backends of every node.
func TestServicesAcrossNodes(t *testing.T) {
	lan := newTestLAN(t)
	s := startServerOnLAN(t, lan, t.TempDir())
	nsA, ipA := lan.node(11)
	nsB, ipB := lan.node(12)
	startAgentOn(t, s, nsA, ipA, "lan-a", "29700-29749")
	startAgentOn(t, s, nsB, ipB, "lan-b", "29750-29799")
	const ns = "demo"
	s.cleanupProcesses(ns)

	// web: one instance on each node (hostname UNIQUE), serving its node's address on a
	// fixed port of its node, ready while www/healthz exists.
	s.applySpec(t, httpdProcess{name: "web", ns: ns, instances: 2, prepare: "echo $BCS_NODE_IP > www/index.html && touch www/healthz", hostPort: 29710, cpu: "0.1",
		constraint: `{"intersectionItem":[{"unionData":[{"name":"hostname","operate":"UNIQUE"}]}]}`,
		healthChecks: `[{"type":"HTTP","intervalSeconds":2,"timeoutSeconds":1,"consecutiveFailures":100,"gracePeriodSeconds":1,
			"http":{"portName":"http","path":"/healthz"}}]`}.json())
	s.applySpec(t, fmtSpec(`{"apiVersion":"v4","kind":"service","metadata":{"name":"web","namespace":%q},
		"spec":{"selector":{"app":"web"},"ports":[{"name":"http","protocol":"http","servicePort":80}]}}`, ns))
	// client: an instance on node lan-a that resolves web.demo through its node's DNS
	// server (BERTH_DNS) twice a second, the last answer in dns.txt.
	s.applySpec(t, fmtSpec(`{"apiVersion":"v4","kind":"process","metadata":{"name":"client","namespace":%q,"labels":{"app":"client"}},
		"restartPolicy":{"policy":"Never"},"killPolicy":{"gracePeriod":1},
		"constraint":{"intersectionItem":[{"unionData":[{"name":"hostname","operate":"CLUSTER","type":4,"set":{"item":["lan-a"]}}]}]},
		"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"sh","startGracePeriod":1,
			"startCmd":"while :; do busybox nslookup web.%s $(echo $BERTH_DNS | cut -d: -f1) > dns.new 2>&1; mv dns.new dns.txt; sleep 0.5; done",
			"resources":{"limits":{"cpu":"0.1","memory":"32"}}}]}}}}`, ns, ns))

	webs := s.running(t, ns, "web", 2)
	both := []string{ipA, ipB}
	if got := []string{webs[0].Spec.Node, webs[1].Spec.Node}; got[0] == got[1] {
		t.Fatalf("both instances of web on %s", got[0])
	}
	client := s.running(t, ns, "client", 1)[0]
	clientAnswer := func() []string {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pidOf(client)) + "/cwd/dns.txt")
		return answerAddresses(string(b))
	}
	// Every node's DNS server answers BCS's short forms with both instances, and so does
	// the client's.
	answers := func(want []string) func() bool {
		return func() bool {
			return slices.Equal(clientAnswer(), want) && slices.Equal(nslookupIn(nsA, ipA, "web."+ns), want) &&
				slices.Equal(nslookupIn(nsB, ipB, "web."+ns+".svc"), want)
		}
	}
	waitUntil(t, 30*time.Second, "web.demo to resolve to both nodes' instances on every node", answers(both))

	// The full name is the VIP's, on every node.
	vip := s.serviceVIP(t, ns, "web")
	waitUntil(t, 30*time.Second, "web.demo.svc.cluster.local to resolve to the VIP on every node", func() bool {
		return slices.Equal(nslookupIn(nsA, ipA, "web."+ns+".svc.cluster.local"), []string{vip}) &&
			slices.Equal(nslookupIn(nsB, ipB, "web."+ns+".svc.cluster.local"), []string{vip})
	})
	// through counts the instances that answer GET http://VIP/ from node ns, n times.
	through := func(nodeNS string, n int) map[string]int {
		got := map[string]int{}
		for range n {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			out, err := exec.CommandContext(ctx, "ip", "netns", "exec", nodeNS, "busybox", "wget", "-qO-", "http://"+vip+"/").CombinedOutput()
			cancel()
			if err == nil {
				got[strings.TrimSpace(string(out))]++
			}
		}
		return got
	}
	waitUntil(t, 30*time.Second, "lan-a to forward the VIP to both nodes' instances", func() bool {
		got := through(nsA, 10)
		return got[ipA] > 0 && got[ipB] > 0
	})
	waitUntil(t, 30*time.Second, "lan-b to forward the VIP to both nodes' instances", func() bool {
		got := through(nsB, 10)
		return got[ipA] > 0 && got[ipB] > 0
	})

	// lan-b's instance fails its health check: it leaves every node's answer and the
	// VIP's backends, and comes back when the check passes.
	var onB *v4.TaskGroup
	for _, tg := range webs {
		if tg.Spec.Node == "lan-b" {
			onB = tg
		}
	}
	healthz := "/proc/" + strconv.Itoa(pidOf(onB)) + "/cwd/healthz" // httpd works in its -h directory
	if err := os.Remove(healthz); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "the unhealthy instance to leave every node's answer", answers([]string{ipA}))
	if got := through(nsA, 10); got[ipA] != 10 {
		t.Errorf("the VIP from lan-a with lan-b's instance unhealthy: %v, want only %s", got, ipA)
	}
	if err := os.WriteFile(healthz, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "the instance to come back", answers(both))

	// lan-b's instance is killed (restart policy Never: it stays Failed).
	if err := syscall.Kill(pidOf(onB), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "the killed instance to leave every node's answer", answers([]string{ipA}))
	if got := through(nsA, 10); got[ipA] != 10 {
		t.Errorf("the VIP from lan-a after lan-b's instance was killed: %v, want only %s", got, ipA)
	}
	if got := through(nsB, 10); got[ipA] != 10 {
		t.Errorf("the VIP from lan-b after its own instance was killed: %v, want only %s", got, ipA)
	}
	s.mustBerth("delete", "service", "web", "-n", ns)
}
