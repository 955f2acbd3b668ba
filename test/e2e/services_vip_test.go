package e2e

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startVIPNode starts a server and one Docker agent with the service proxy on, its DNS
// server at dnsAddr; the agent's cleanup removes the proxy's table (runAgent).
func startVIPNode(t *testing.T, name, ports, dnsAddr string) *devServer {
	t.Helper()
	requireDocker(t)
	ip := dockerBridgeIP(t)
	s := startServer(t, t.TempDir())
	startDockerAgent(t, s, name, ports, "--ip", ip, "--dns-addr", dnsAddr, "--service-proxy", "on")
	return s
}

// webApp is an application of n containers serving their host name on port 8080 (the
// task port http).
func webApp(name, ns string, n int) string {
	return appSpec{name: name, ns: ns, instances: n, containers: []string{container("main",
		`mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www`,
		`,"ports":[{"name":"http","containerPort":8080,"hostPort":-1,"protocol":"http"}]`)}}.json()
}

// webServiceSpec is service name of ns, port 80 to the task port http of app=name.
func webServiceSpec(name, ns string) string {
	return fmtSpec(`{"apiVersion":"v4","kind":"service","metadata":{"name":%q,"namespace":%q},
		"spec":{"selector":{"app":%q},"ports":[{"name":"http","protocol":"http","servicePort":80}]}}`, name, ns, name)
}

// dialVIP opens a TCP connection from this host to addr and says whether it was refused,
// and how long the answer took.
func dialVIP(addr string) (refused bool, took time.Duration, err error) {
	start := time.Now()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	took = time.Since(start)
	if err == nil {
		conn.Close()
	}
	return errors.Is(err, syscall.ECONNREFUSED), took, err
}

// refusedFast checks that 10 connections to addr are each refused within 100 ms, and
// returns the slowest answer.
func refusedFast(t *testing.T, addr, when string) time.Duration {
	t.Helper()
	var slowest time.Duration
	for range 10 {
		refused, took, err := dialVIP(addr)
		if !refused || took >= 100*time.Millisecond {
			t.Errorf("%s: a connection to %s: %v after %s, want refused in under 100 ms", when, addr, err, took)
		}
		slowest = max(slowest, took)
	}
	t.Logf("%s: the slowest of 10 refusals took %s", when, slowest)
	return slowest
}

// A service's VIP with no ready instance refuses connections at once (a TCP reset from
// the node's proxy), from the node and from a container; with an instance it connects;
// when the instance goes, it refuses again.
func TestServiceVIPWithoutInstancesRefuses(t *testing.T) {
	s := startVIPNode(t, "vipref", "29800-29849", "127.0.0.1:0")
	const ns = "vipe2e"
	s.cleanupApps(ns)
	s.applySpec(t, webServiceSpec("web", ns)) // no instance yet
	s.applySpec(t, appSpec{name: "client", ns: ns, containers: []string{container("main", "exec sleep 3600", "")}}.json())
	vip := s.serviceVIP(t, ns, "web")
	addr := net.JoinHostPort(vip, "80")

	waitUntil(t, 30*time.Second, "the VIP without instances to refuse connections", func() bool {
		refused, _, _ := dialVIP(addr)
		return refused
	})
	refusedFast(t, addr, "no instance")
	// From a container: its packets to the VIP go through the node's forward hook.
	client := containerIDs(s.running(t, ns, "client", 1)[0])[0]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	start := time.Now()
	out, err := exec.CommandContext(ctx, "docker", "exec", client, "busybox", "nc", "-w", "3", vip, "80").CombinedOutput()
	cancel()
	if !strings.Contains(string(out), "refused") {
		table, _ := exec.Command("nft", "list", "table", "ip", proxyTableOf(s.dataDir)).CombinedOutput()
		t.Errorf("nc %s 80 from a container: %q (%v after %s), want connection refused\nthe table:\n%s", vip, out, err, time.Since(start), table)
	}

	s.applySpec(t, webApp("web", ns, 1))
	web := s.running(t, ns, "web", 1)[0]
	want := containerHostname(t, containerIDs(web)[0])
	httpc := &http.Client{Timeout: 2 * time.Second}
	waitUntil(t, 30*time.Second, "the VIP to reach the instance", func() bool {
		resp, err := httpc.Get("http://" + addr + "/")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return err == nil && strings.TrimSpace(string(b)) == want
	})

	s.mustBerth("delete", "application", "web", "-n", ns)
	deadline := time.Now().Add(30 * time.Second)
	for refused, _, err := dialVIP(addr); !refused; refused, _, err = dialVIP(addr) {
		if time.Now().After(deadline) {
			table, _ := exec.Command("nft", "list", "table", "ip", proxyTableOf(s.dataDir)).CombinedOutput()
			t.Fatalf("the VIP still not refused 30 s after its instance went: %v\nendpoints: %s\nthe table:\n%s", err,
				s.berth("", "get", "endpoints", "web", "-n", ns, "-o", "json").stdout, table)
		}
		time.Sleep(200 * time.Millisecond)
	}
	refusedFast(t, addr, "the instance went")
	s.mustBerth("delete", "service", "web", "-n", ns)
	s.mustBerth("delete", "application", "client", "-n", ns)
}

// A container reaches a service as on Kubernetes: web, web.NS and web.NS.svc.cluster.local
// resolve, through its search list and ndots:5, to the service's VIP, which it fetches
// through; a query sent as written for BCS's short form web.NS (busybox nslookup, as
// BCS's processes do through BCS_DNS) gets the instances' addresses.
func TestServiceNamesFromAContainer(t *testing.T) {
	s := startVIPNode(t, "vipnames", "29850-29899", "auto")
	const ns = "namese2e"
	s.cleanupApps(ns)
	s.applySpec(t, webApp("web", ns, 2))
	s.applySpec(t, webServiceSpec("web", ns))
	s.applySpec(t, appSpec{name: "client", ns: ns, containers: []string{container("main", "exec sleep 3600", "")}}.json())
	vip := s.serviceVIP(t, ns, "web")
	webs := s.running(t, ns, "web", 2)
	var webIPs, hosts []string
	for _, tg := range webs {
		webIPs = append(webIPs, tg.Status.Tasks[0].Info.IPAddress)
		hosts = append(hosts, containerHostname(t, containerIDs(tg)[0]))
	}
	slices.Sort(webIPs)
	client := containerIDs(s.running(t, ns, "client", 1)[0])[0]

	resolv, err := exec.Command("docker", "exec", client, "cat", "/etc/resolv.conf").CombinedOutput()
	if err != nil || !strings.Contains(string(resolv), "options ndots:5") ||
		!strings.Contains(string(resolv), "search "+ns+".svc.cluster.local svc.cluster.local cluster.local") {
		t.Errorf("the container's resolv.conf: %v\n%s", err, resolv)
	}

	for _, name := range []string{"web", "web." + ns, "web." + ns + ".svc.cluster.local"} {
		var last string
		waitUntil(t, 30*time.Second, "wget http://"+name+"/ from the container through the VIP", func() bool {
			// No wget -T: that busybox's wget crashes with it.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			out, _ := exec.CommandContext(ctx, "docker", "exec", client, "busybox", "wget", "-O-", "http://"+name+"/").CombinedOutput()
			last = string(out)
			served := slices.ContainsFunc(strings.Split(last, "\n"), func(line string) bool { return slices.Contains(hosts, strings.TrimSpace(line)) })
			return served && strings.Contains(last, "Connecting to "+name+" ("+vip+":80)")
		})
		t.Logf("wget http://%s/:\n%s", name, last)
	}

	bridge := dockerBridgeIP(t)
	if got := answerOf(client, "web."+ns, bridge); !slices.Equal(got, webIPs) {
		t.Errorf("nslookup web.%s (BCS's short form, as written): %v, want the instances %v", ns, got, webIPs)
	}
	if got := answerOf(client, "web."+ns+".svc.cluster.local", bridge); !slices.Equal(got, []string{vip}) {
		t.Errorf("nslookup web.%s.svc.cluster.local: %v, want the VIP %s", ns, got, vip)
	}
	s.mustBerth("delete", "service", "web", "-n", ns)
	for _, name := range []string{"web", "client"} {
		s.mustBerth("delete", "application", name, "-n", ns)
	}
}

// answerOf asks server for name from inside container id with busybox nslookup (which
// sends a name with a dot as written) and returns the sorted addresses of the answer.
func answerOf(id, name, server string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, "docker", "exec", id, "busybox", "nslookup", name, server).CombinedOutput()
	return answerAddresses(string(out))
}
