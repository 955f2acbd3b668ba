package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A container over its memory limit is OOMKilled; cpuset-cpus is applied as given.
func TestContainerOOMAndCpuset(t *testing.T) {
	s, _ := startDockerNode(t, "dk-res", "32700-32799")
	// The shell keeps a command substitution in memory: 64 MB under a 16 MB limit.
	s.applySpec(t, appSpec{name: "hungry", ns: "e2e", containers: []string{
		container("eat", `sleep 1; x=$(busybox head -c 67108864 /dev/zero | busybox tr '\000' a); exec sleep 100000`,
			`,"resources":{"requests":{"cpu":"0.1","memory":"16"},"limits":{"cpu":"0.5","memory":"16"}}`),
	}}.json())
	s.applySpec(t, appSpec{name: "pinned", ns: "e2e", containers: []string{
		container("app", "exec sleep 100000", `,"parameters":[{"key":"cpuset-cpus","value":"0"}]`),
	}}.json())

	tg := s.failedWith(t, "e2e", "hungry")
	if !tg.Status.Tasks[0].Info.OOMKilled || !strings.Contains(tg.Status.Message, "out of memory") {
		t.Errorf("want OOMKilled, got %+v (message %q)", tg.Status.Tasks[0].Info, tg.Status.Message)
	}
	if desc := s.mustBerth("describe", "application", "hungry", "-n", "e2e"); !strings.Contains(desc, "OOMKilled") {
		t.Errorf("describe does not show OOMKilled:\n%s", desc)
	}

	tg = s.running(t, "e2e", "pinned", 1)[0]
	if got := inspect(t, tg.Status.Tasks[0].Info.ID, "{{.HostConfig.CpusetCpus}}"); got != "0" {
		t.Errorf("cpuset-cpus = %q, want 0", got)
	}
	if got := inspect(t, tg.Status.Tasks[0].Info.ID, "{{.HostConfig.CpuShares}}"); got != "102" {
		t.Errorf("cpu-shares = %q, want 102 (0.1 x 1024)", got)
	}
}

// Bad input fails clearly, with the reason in the status, describe and events, and no
// container left: an image that is not there (nothing can be pulled), an unknown user
// network, a cpuset beyond the machine, and a Docker daemon that does not answer.
func TestBadContainersFailWithTheirReason(t *testing.T) {
	s, _ := startDockerNode(t, "dk-bad", "28800-28899")
	nproc := strconv.Itoa(numCPU())
	cases := []struct {
		name   string
		spec   appSpec
		reason string
	}{
		{"noimage", appSpec{containers: []string{fmtSpec(`{"name":"c","image":"test/not-there-berth:1"%s}`, withResources(""))}}, "test/not-there-berth:1"},
		{"nonet", appSpec{mode: "USER", containers: []string{container("c", "exec sleep 100000", `,"parameters":[{"key":"net","value":"no-such-net-berth"}]`)}}, "no-such-net-berth"},
		{"cpuset", appSpec{containers: []string{container("c", "exec sleep 100000", `,"parameters":[{"key":"cpuset-cpus","value":"`+nproc+`"}]`)}}, "Requested CPUs are not available"},
	}
	for _, tc := range cases {
		tc.spec.name, tc.spec.ns = "bad-"+tc.name, "e2e"
		s.applySpec(t, tc.spec.json())
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg := s.failedWith(t, "e2e", "bad-"+tc.name)
			if !strings.Contains(tg.Status.Message, tc.reason) {
				t.Errorf("status message %q lacks %q", tg.Status.Message, tc.reason)
			}
			if desc := s.mustBerth("describe", "application", "bad-"+tc.name, "-n", "e2e"); !strings.Contains(desc, tc.reason) {
				t.Errorf("describe lacks %q:\n%s", tc.reason, desc)
			}
			s.eventsSay(tc.reason, "-n", "e2e", "--for", "application/bad-"+tc.name)
		})
	}
	if ids := nodeContainers(t, "dk-bad", false); len(ids) != 0 {
		t.Errorf("containers of failed starts still run: %v", ids)
	}

	// cpuset: "true" binds ceil(request) CPUs: a request over the machine cannot be placed
	// (the scheduler counts the node's CPUs), and says so.
	s.applySpec(t, appSpec{name: "bad-cpuset-request", ns: "e2e", containers: []string{
		container("c", "exec sleep 100000", `,"parameters":[{"key":"cpuset","value":"true"}],"resources":{"requests":{"cpu":"`+strconv.Itoa(numCPU()+1)+`","memory":"32"}}`),
	}}.json())
	waitUntil(t, 60*time.Second, "bad-cpuset-request to say it does not fit", func() bool {
		desc := s.berth("", "describe", "application", "bad-cpuset-request", "-n", "e2e").stdout
		return strings.Contains(strings.ToLower(desc), "cpu") && len(s.taskGroups("e2e", "bad-cpuset-request")) == 0
	})

	// A daemon that does not answer (an agent pointed at a socket with no dockerd).
	s2 := startServer(t, t.TempDir())
	startDockerAgent(t, s2, "dk-nodaemon", "28900-28999", "--docker-host", "unix://"+filepath.Join(t.TempDir(), "no-docker.sock"))
	s2.cleanupApps("e2e")
	s2.applySpec(t, appSpec{name: "nodaemon", ns: "e2e", containers: []string{container("c", "exec sleep 100000", "")}}.json())
	tg := s2.failedWith(t, "e2e", "nodaemon")
	if !strings.Contains(tg.Status.Message, "docker daemon unreachable") {
		t.Errorf("message = %q", tg.Status.Message)
	}
	s2.eventsSay("docker daemon unreachable", "-n", "e2e", "--for", "application/nodaemon")
}

func numCPU() int {
	out, err := exec.Command("nproc").Output()
	if err != nil {
		return 1
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return max(n, 1)
}

// A CNI pod gets its IP from host-local through the agent's --cni-conf-dir; all its
// containers share the sandbox's network; deleting it releases the IP.
func TestContainerCNIPod(t *testing.T) {
	requireDocker(t)
	if _, err := os.Stat("/usr/lib/cni/host-local"); err != nil {
		if os.Getenv("BERTH_REQUIRE_DOCKER") == "1" {
			t.Fatalf("CNI plugins missing (apt-get install containernetworking-plugins): %v", err)
		}
		t.Skip("no CNI plugins in /usr/lib/cni")
	}
	network := "berth-e2e-" + strconv.Itoa(os.Getpid())
	bridge := "berthe2e" + strconv.Itoa(os.Getpid()%10000)
	confDir := t.TempDir()
	os.WriteFile(filepath.Join(confDir, "10-berth.conflist"), []byte(fmt.Sprintf(`{
  "cniVersion": "0.4.0", "name": %q,
  "plugins": [
    {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false,
     "ipam": {"type": "host-local", "subnet": "10.88.9.0/24", "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]}`, network, bridge)), 0o644)
	t.Cleanup(func() {
		exec.Command("ip", "link", "del", bridge).Run()
		os.RemoveAll(filepath.Join("/var/lib/cni/networks", network))
	})
	s := startServer(t, t.TempDir())
	startDockerAgent(t, s, "dk-cni", "29000-29099", "--cni-conf-dir", confDir)
	s.cleanupApps("e2e")
	s.applySpec(t, appSpec{name: "cnipod", ns: "e2e", netType: "cni", containers: []string{
		webContainer("web", "8080", `,"ports":[{"name":"http","containerPort":8080,"hostPort":0,"protocol":"http"}]`),
		container("side", "exec sleep 100000", ""),
	}}.json())
	tg := s.running(t, "e2e", "cnipod", 1)[0]
	ip := tg.Status.Tasks[0].Info.IPAddress
	if !strings.HasPrefix(ip, "10.88.9.") || tg.Status.Tasks[1].Info.IPAddress != ip {
		t.Fatalf("IPs = %q %q, want one from 10.88.9.0/24 for the pod", ip, tg.Status.Tasks[1].Info.IPAddress)
	}
	lease := filepath.Join("/var/lib/cni/networks", network, ip)
	if _, err := os.Stat(lease); err != nil {
		t.Errorf("host-local lease: %v", err)
	}
	if env := envOf(s.execIn("e2e", tg.Metadata.Name, "side", "env").stdout); env["BCS_CONTAINER_IP"] != ip {
		t.Errorf("BCS_CONTAINER_IP = %q, want %s", env["BCS_CONTAINER_IP"], ip)
	}
	waitUntil(t, 20*time.Second, "the pod's httpd from the host on its CNI IP", func() bool {
		code, body, err := httpGet("http://" + ip + ":8080/index.html")
		return err == nil && code == 200 && body == "hello\n"
	})
	if r := s.execIn("e2e", tg.Metadata.Name, "side", "wget", "-qO-", "127.0.0.1:8080/index.html"); r.stdout != "hello\n" {
		t.Errorf("side to web on loopback: %d %q %s", r.code, r.stdout, r.stderr)
	}

	s.mustBerth("delete", "application", "cnipod", "-n", "e2e")
	waitUntil(t, 60*time.Second, "the IP to be released", func() bool {
		_, err := os.Stat(lease)
		return os.IsNotExist(err) && len(s.taskGroups("e2e", "cnipod")) == 0
	})
	waitNoContainers(t, "dk-cni", 30*time.Second)
	if out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label=berth.docker.pod=e2e."+tg.Metadata.Name).Output(); strings.TrimSpace(string(out)) != "" {
		t.Errorf("the sandbox is still there: %s", out)
	}
}
