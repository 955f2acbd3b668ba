package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// dockerBridgeIP is the host's address on Docker's default bridge: containers reach the
// host there, and the host's processes have it too, so an agent with that IP serves
// both with one DNS server on port 53.
func dockerBridgeIP(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("docker", "network", "inspect", "bridge", "-f", "{{(index .IPAM.Config 0).Gateway}}").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("the address of Docker's bridge: %v %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// nslookup resolves name from inside container id with busybox and returns the sorted
// addresses of the answer.
func nslookup(id, name string) []string {
	out, _ := exec.Command("docker", "exec", id, "busybox", "nslookup", name).CombinedOutput()
	var ips []string
	for _, line := range strings.Split(string(out), "\n") {
		if ip, ok := strings.CutPrefix(line, "Address: "); ok {
			ips = append(ips, strings.TrimSpace(ip))
		}
	}
	slices.Sort(ips)
	return ips
}

// Services by name on a node: a container resolves a service to its ready instances
// only (an instance whose health check fails, or that is killed, leaves the answer), and
// a process and a container reach each other by their services' names through the
// node's cluster DNS server.
func TestServicesByName(t *testing.T) {
	requireDocker(t)
	ip := dockerBridgeIP(t)
	s := startServer(t, t.TempDir())
	startDockerAgent(t, s, "dns", "29400-29499", "--ip", ip, "--dns-addr", "auto", "--service-proxy", "on")
	// The proxy's table outlives its agent, by design: the agent's cleanup removes it
	// once the agent is gone (runAgent).
	const ns = "dnse2e"
	s.cleanupProcesses(ns)
	s.cleanupApps(ns)

	// cweb: two containers serving their host name, healthy while /www/healthz exists.
	s.applySpec(t, appSpec{name: "cweb", ns: ns, instances: 2, containers: []string{container("main",
		`mkdir -p /www && hostname > /www/index.html && touch /www/healthz && exec httpd -f -p 8080 -h /www`,
		`,"ports":[{"name":"http","containerPort":8080,"hostPort":-1,"protocol":"http"}],
		"healthChecks":[{"type":"HTTP","intervalSeconds":2,"timeoutSeconds":1,"consecutiveFailures":100,"gracePeriodSeconds":1,
			"http":{"portName":"http","path":"/healthz"}}]`)}}.json())
	// pweb: a process serving on a fixed port of the node.
	s.applySpec(t, httpdProcess{name: "pweb", ns: ns, instances: 1, prepare: "echo process > www/index.html", hostPort: 29410, cpu: "0.1"}.json())
	for _, svc := range []string{"cweb", "pweb"} {
		s.applySpec(t, fmtSpec(`{"apiVersion":"v4","kind":"service","metadata":{"name":%q,"namespace":%q},
			"spec":{"selector":{"app":%q},"ports":[{"name":"http","protocol":"http","servicePort":80}]}}`, svc, ns, svc))
	}
	// pclient: a process that finds cweb through BERTH_DNS and fetches its page, then
	// sleeps (its name is checked after the grace, once it is sleep).
	s.applySpec(t, fmtSpec(`{"apiVersion":"v4","kind":"process","metadata":{"name":"pclient","namespace":%q,"labels":{"app":"pclient"}},
		"restartPolicy":{"policy":"Never"},"killPolicy":{"gracePeriod":1},
		"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"sleep","startGracePeriod":20,
			"startCmd":"while :; do a=$(busybox nslookup cweb.%s $(echo $BERTH_DNS | cut -d: -f1) | sed -n 's/^Address: //p' | head -1); [ -n \"$a\" ] && busybox wget -qO got.txt http://$a:8080/ && break; sleep 0.3; done; exec sleep 3600",
			"resources":{"limits":{"cpu":"0.1","memory":"32"}}}]}}}}`, ns, ns))
	s.applySpec(t, appSpec{name: "cclient", ns: ns, containers: []string{container("main", "exec sleep 3600", "")}}.json())

	webs := s.running(t, ns, "cweb", 2)
	client := containerIDs(s.running(t, ns, "cclient", 1)[0])[0]
	var webIPs []string
	for _, tg := range webs {
		webIPs = append(webIPs, tg.Status.Tasks[0].Info.IPAddress)
	}
	slices.Sort(webIPs)
	// BCS's short form, which busybox's nslookup sends as written: the instances.
	waitUntil(t, 30*time.Second, "cweb to resolve to both instances", func() bool {
		return slices.Equal(nslookup(client, "cweb."+ns), webIPs)
	})
	// The namespace's search domain: the service's name alone is its full name, the VIP.
	vip := s.serviceVIP(t, ns, "cweb")
	if got := nslookup(client, "cweb"); !slices.Equal(got, []string{vip}) {
		t.Errorf("cweb from its namespace: %v, want the VIP %s", got, vip)
	}

	// Container to process, by name: through pweb's VIP and service port (the search list
	// makes pweb.NS its full name), and at the instance's own port by BCS's short form
	// asked as an absolute name.
	for _, url := range []string{"http://pweb." + ns + "/", "http://pweb." + ns + ".:29410/"} {
		waitUntil(t, 30*time.Second, "the container to reach pweb by name at "+url, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, "docker", "exec", client, "wget", "-qO-", url).CombinedOutput()
			return err == nil && strings.TrimSpace(string(out)) == "process"
		})
	}
	// Process to container, by name.
	pc := s.running(t, ns, "pclient", 1)[0]
	waitUntil(t, 30*time.Second, "the process to fetch cweb's page by name", func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pidOf(pc)) + "/cwd/got.txt")
		return err == nil && strings.TrimSpace(string(b)) != ""
	})

	// The service's VIP, from a container: round robin over both instances.
	hosts := func(n int) map[string]int {
		got := map[string]int{}
		for range n {
			// No wget -T: that busybox's wget crashes with it.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			out, err := exec.CommandContext(ctx, "docker", "exec", client, "wget", "-qO-", "http://"+vip+"/").CombinedOutput()
			cancel()
			if err == nil {
				got[strings.TrimSpace(string(out))]++
			}
		}
		return got
	}
	waitUntil(t, 30*time.Second, "the VIP to reach both instances", func() bool { return len(hosts(6)) == 2 })

	// A failing health check takes an instance out of the answer; it comes back when
	// the check passes again.
	first := containerIDs(webs[0])[0]
	if out, err := exec.Command("docker", "exec", first, "busybox", "rm", "/www/healthz").CombinedOutput(); err != nil {
		t.Fatalf("rm healthz: %v %s", err, out)
	}
	others := slices.DeleteFunc(slices.Clone(webIPs), func(ip string) bool { return ip == webs[0].Status.Tasks[0].Info.IPAddress })
	waitUntil(t, 30*time.Second, "the unhealthy instance to leave the answer", func() bool {
		return slices.Equal(nslookup(client, "cweb."+ns), others)
	})
	out := s.mustBerth("describe", "service", "cweb", "-n", ns)
	if !strings.Contains(out, "Not Ready:") || !strings.Contains(out, "health check failing") {
		t.Errorf("describe service does not show the unhealthy instance:\n%s", out)
	}
	if out, err := exec.Command("docker", "exec", first, "busybox", "touch", "/www/healthz").CombinedOutput(); err != nil {
		t.Fatalf("touch healthz: %v %s", err, out)
	}
	waitUntil(t, 30*time.Second, "the instance to come back", func() bool {
		return slices.Equal(nslookup(client, "cweb."+ns), webIPs)
	})

	// A killed instance leaves the answer (restart policy Never: it stays Failed).
	if out, err := exec.Command("docker", "kill", first).CombinedOutput(); err != nil {
		t.Fatalf("docker kill: %v %s", err, out)
	}
	waitUntil(t, 30*time.Second, "the killed instance to leave the answer", func() bool {
		return slices.Equal(nslookup(client, "cweb."+ns), others)
	})
	if got := hosts(4); len(got) != 1 || got[containerHostname(t, containerIDs(webs[1])[0])] != 4 {
		t.Errorf("the VIP after an instance was killed: %v, want only the other", got)
	}
	if tg := s.taskGroupOf(ns, "cweb", webs[0].Metadata.Name); tg == nil || tg.Status.Phase != v4.StatusFailed {
		t.Errorf("the killed instance: %+v", tg)
	}
	for _, name := range []string{"cweb", "pweb"} {
		s.mustBerth("delete", "service", name, "-n", ns)
	}
	// Both kinds share the namespace, and each cleanup waits for all its task groups.
	for _, name := range []string{"pweb", "pclient"} {
		s.mustBerth("delete", "process", name, "-n", ns)
	}
	for _, name := range []string{"cweb", "cclient"} {
		s.mustBerth("delete", "application", name, "-n", ns)
	}
}

// serviceVIP waits until service ns/name has a VIP in its endpoints and returns it.
func (s *devServer) serviceVIP(t *testing.T, ns, name string) string {
	t.Helper()
	var vip string
	waitUntil(t, 30*time.Second, name+"'s VIP", func() bool {
		r := s.berth("", "get", "endpoints", name, "-n", ns, "-o", "json")
		var ep v4.Endpoints
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &ep) != nil {
			return false
		}
		vip = ep.VIP
		return vip != ""
	})
	return vip
}

// containerHostname is a container's host name (what cweb serves).
func containerHostname(t *testing.T, id string) string {
	t.Helper()
	out, err := exec.Command("docker", "inspect", "-f", "{{.Config.Hostname}}", id).Output()
	if err != nil {
		t.Fatalf("docker inspect %s: %v", id, err)
	}
	return strings.TrimSpace(string(out))
}
