package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// webContainer serves "hello" with busybox httpd on port (a shell expression).
func webContainer(name, port, extra string) string {
	return container(name, "mkdir -p /www && echo hello > /www/index.html && exec httpd -f -p "+port+" -h /www", extra)
}

// A two-container pod: the second container shares the first's network (it reaches the
// first's httpd on 127.0.0.1), the BRIDGE random host port is published on the host, the
// injected env and the $VAR copies are right inside the containers (read through berth
// exec), and berth exec returns the command's exit status. Deleting it leaves nothing.
func TestContainerPodSharesTheFirstContainersNetwork(t *testing.T) {
	s, _ := startDockerNode(t, "dk-net", "32400-32499")
	s.applySpec(t, appSpec{name: "pair", ns: "e2e", containers: []string{
		webContainer("web", "8080", `,"ports":[{"name":"http","containerPort":8080,"hostPort":0,"protocol":"http"}]`),
		container("side", "exec sleep 100000", `,"env":[{"name":"MYIP","value":"$BCS_CONTAINER_IP"},{"name":"POD","value":"$BCS_POD_ID"},{"name":"WEBPORT","value":"$PORT_http"},{"name":"KEEP","value":"x$HOST"}]`),
	}}.json())
	tg := s.running(t, "e2e", "pair", 1)[0]
	httpPort := port(tg, "http")
	if httpPort < 32400 || httpPort > 32499 {
		t.Fatalf("random host port %d is not from the node's range", httpPort)
	}
	webIP := tg.Status.Tasks[0].Info.IPAddress
	if webIP == "" || webIP == "127.0.0.1" || tg.Status.Tasks[1].Info.IPAddress != webIP {
		t.Errorf("IPs = %q %q, want the first container's bridge IP on both", webIP, tg.Status.Tasks[1].Info.IPAddress)
	}
	if got := inspect(t, tg.Status.Tasks[0].Info.ID, "{{.NetworkSettings.IPAddress}}"); got != webIP {
		t.Errorf("docker says the first container's IP is %s, berth %s", got, webIP)
	}
	if mode := inspect(t, tg.Status.Tasks[1].Info.ID, "{{.HostConfig.NetworkMode}}"); mode != "container:"+tg.Status.Tasks[0].Info.ID {
		t.Errorf("second container's network mode = %s", mode)
	}

	// The second reaches the first on loopback: they share a network namespace.
	waitUntil(t, 20*time.Second, "httpd answering in the pod", func() bool {
		r := s.execIn("e2e", tg.Metadata.Name, "side", "wget", "-qO-", "127.0.0.1:8080/index.html")
		return r.code == 0 && r.stdout == "hello\n"
	})
	// The host reaches it on the random host port.
	if code, body, err := httpGet("http://127.0.0.1:" + strconv.Itoa(httpPort) + "/index.html"); err != nil || code != 200 || body != "hello\n" {
		t.Errorf("host port %d: %d %q %v", httpPort, code, body, err)
	}

	r := s.execIn("e2e", tg.Metadata.Name, "side", "env")
	if r.code != 0 {
		t.Fatalf("exec env: %d %s", r.code, r.stderr)
	}
	env := envOf(r.stdout)
	want := map[string]string{
		"PORT_http": strconv.Itoa(httpPort), "BCS_NODE_IP": "127.0.0.1", "BCS_POD_ID": tg.Metadata.Name,
		"BCS_CONTAINER_IP": webIP, "HOST": webIP, "MYIP": webIP, "POD": tg.Metadata.Name,
		"WEBPORT": strconv.Itoa(httpPort), "KEEP": "x$HOST", // one level, whole value only
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("env %s = %q, want %q", k, env[k], v)
		}
	}
	// The first container is the default task; exit statuses come back.
	if r := s.execIn("e2e", tg.Metadata.Name, "", "sh", "-c", "exit 7"); r.code != 7 {
		t.Errorf("exit status = %d, want 7 (%s)", r.code, r.stderr)
	}
	if r := s.execIn("e2e", tg.Metadata.Name, "nope", "true"); r.code != 1 || !strings.Contains(r.stderr, `no task "nope"`) {
		t.Errorf("unknown task: %d %q", r.code, r.stderr)
	}

	s.mustBerth("delete", "application", "pair", "-n", "e2e")
	waitUntil(t, 60*time.Second, "the task group to go", func() bool { return len(s.taskGroups("e2e", "pair")) == 0 })
	waitNoContainers(t, "dk-net", 30*time.Second)
}

// HOST mode: containerPort 0 is a random host port from the node's range, in PORT_<name>,
// and the container serves on it on the host's network.
func TestContainerHostMode(t *testing.T) {
	requireDocker(t)
	s := startServer(t, t.TempDir())
	// The host's network is a privilege the node's operator grants.
	startDockerAgent(t, s, "dk-host", "32500-32599", "--allow-privileged")
	s.cleanupApps("e2e")
	s.applySpec(t, appSpec{name: "hostweb", ns: "e2e", mode: "HOST", containers: []string{
		webContainer("web", "$PORT_http", `,"ports":[{"name":"http","containerPort":0,"protocol":"http"}]`),
	}}.json())
	tg := s.running(t, "e2e", "hostweb", 1)[0]
	p := port(tg, "http")
	if p < 32500 || p > 32599 {
		t.Fatalf("random port %d is not from the node's range", p)
	}
	if mode := inspect(t, tg.Status.Tasks[0].Info.ID, "{{.HostConfig.NetworkMode}}"); mode != "host" {
		t.Errorf("network mode = %s", mode)
	}
	if ip := tg.Status.Tasks[0].Info.IPAddress; ip != "127.0.0.1" {
		t.Errorf("IP = %q, want the node's", ip)
	}
	waitUntil(t, 20*time.Second, "httpd on the host port", func() bool {
		code, body, err := httpGet("http://127.0.0.1:" + strconv.Itoa(p) + "/index.html")
		return err == nil && code == 200 && body == "hello\n"
	})
	if env := envOf(s.execIn("e2e", tg.Metadata.Name, "", "env").stdout); env["PORT_http"] != strconv.Itoa(p) || env["BCS_CONTAINER_IP"] != "127.0.0.1" {
		t.Errorf("env: PORT_http=%q BCS_CONTAINER_IP=%q", env["PORT_http"], env["BCS_CONTAINER_IP"])
	}
}

// When the first container cannot start, the group fails and nothing is left running;
// when the second exits, the first is killed and both are Failed with their exit codes.
func TestContainerPodFailures(t *testing.T) {
	s, _ := startDockerNode(t, "dk-fail", "32600-32699")
	s.applySpec(t, appSpec{name: "nostart", ns: "e2e", containers: []string{
		fmtSpec(`{"name":"web","image":%q,"command":"/no/such/binary"%s}`, testImage, withResources("")),
		container("side", "exec sleep 100000", ""),
	}}.json())
	s.applySpec(t, appSpec{name: "sideexit", ns: "e2e", containers: []string{
		container("web", "exec sleep 100000", ""),
		container("side", "sleep 3; exit 3", ""),
	}}.json())

	tg := s.failedWith(t, "e2e", "nostart")
	if !strings.Contains(tg.Status.Message, "start task web") || !strings.Contains(tg.Status.Message, "/no/such/binary") {
		t.Errorf("message = %q", tg.Status.Message)
	}
	for _, task := range tg.Status.Tasks {
		if task.Status != v4.StatusFailed {
			t.Errorf("task %s is %s", task.Name, task.Status)
		}
	}
	if desc := s.mustBerth("describe", "application", "nostart", "-n", "e2e"); !strings.Contains(desc, "/no/such/binary") {
		t.Errorf("describe lacks the reason:\n%s", desc)
	}

	tg = s.failedWith(t, "e2e", "sideexit")
	web, side := tg.Status.Tasks[0], tg.Status.Tasks[1]
	if side.Info.ExitCode != 3 || side.Status != v4.StatusFailed || !strings.Contains(tg.Status.Message, "task side exited with code 3") {
		t.Errorf("side = %+v, message %q", side, tg.Status.Message)
	}
	if web.Status != v4.StatusFailed || web.Info.ExitCode == 0 || web.Info.FinishAt.IsZero() {
		t.Errorf("web = %+v, want killed and Failed with its exit code", web)
	}
	if ids := nodeContainers(t, "dk-fail", false); len(ids) != 0 {
		t.Errorf("containers still running: %v", ids)
	}
}
