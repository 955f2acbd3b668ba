package e2e

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// webSpec is a process application running web-demo from the test's package server.
type webSpec struct {
	name, ns       string
	instances      int
	uri, user, pwd string
	restart        string // restartPolicy JSON
	health         string // healthChecks JSON ("" for none)
	extraPorts     string // more port entries, each starting with a comma
	procUser       string
	startCmd       string
	pidFile        string
	noPidFile      bool // the started process is the task
	memory         string
}

func (w webSpec) json() string {
	if w.restart == "" {
		w.restart = `{"policy":"OnFailure","interval":1}`
	}
	if w.health == "" {
		w.health = "[]"
	}
	if w.startCmd == "" {
		w.startCmd = "./start.sh ${ports.http} ${pidFile}"
	}
	if w.pidFile == "" && !w.noPidFile {
		w.pidFile = "${run_base_dir}/web.pid"
	}
	if w.memory == "" {
		w.memory = "64"
	}
	return fmtSpec(`{"apiVersion":"v4","kind":"process","metadata":{"name":%q,"namespace":%q,"labels":{"app":%q}},
	"restartPolicy":%s,"killPolicy":{"gracePeriod":2},
	"spec":{"instance":%d,"template":{"spec":{"processes":[{
		"procName":"web-demo","user":%q,
		"workPath":"${work_base_dir}/${namespace}.${processname}.${instanceid}",
		"pidFile":%q,
		"uris":[{"value":%q,"user":%q,"pwd":%q,"pullPolicy":"IfNotPresent"}],
		"ports":[{"name":"http","hostPort":0,"protocol":"http"}%s],
		"startCmd":%q,"stopCmd":"kill $(cat ${pidFile})","startGracePeriod":1,
		"env":[{"name":"GREETING","value":"hi from ${processname}.${instanceid} on ${hostip}"},{"name":"WORK","value":"${workPath}"}],
		"healthChecks":%s,
		"resources":{"limits":{"cpu":"0.2","memory":%q}}}]}}}}`,
		w.name, w.ns, w.name, w.restart, w.instances, w.procUser, w.pidFile, w.uri, w.user, w.pwd, w.extraPorts, w.startCmd, w.health, w.memory)
}

// webDemo is a webSpec of instances of web-demo from pkgs, the test's package server.
func webDemo(pkgs *httptest.Server, ns, name string, instances int) webSpec {
	return webSpec{name: name, ns: ns, instances: instances, uri: pkgs.URL + "/web-demo.tar.gz", user: "deploy", pwd: "s3cret"}
}

// startWebDemoNodes starts what the process tests run (as root): a server, the package
// server, and an agent on each port range, node-a, node-b and so on in order.
func startWebDemoNodes(t *testing.T, portRanges ...string) (*devServer, *httptest.Server, []*agentProc) {
	t.Helper()
	requireRoot(t)
	s := startServer(t, t.TempDir())
	pkgs := packageServer(t)
	agents := make([]*agentProc, len(portRanges))
	for i, ports := range portRanges {
		agents[i] = startAgent(t, s, "node-"+string(rune('a'+i)), ports)
	}
	return s, pkgs, agents
}

// httpdProcess is a process application of busybox httpd serving the work dir's www,
// which prepare (a shell command run first) fills; restarts are off.
type httpdProcess struct {
	name, ns     string
	instances    int
	prepare      string
	hostPort     int    // 0: a random one
	cpu          string // its limit
	constraint   string // the constraint JSON ("" for none)
	healthChecks string // their JSON ("" for none)
}

func (p httpdProcess) json() string {
	var constraint, health string
	if p.constraint != "" {
		constraint = `"constraint":` + p.constraint + ","
	}
	if p.healthChecks != "" {
		health = `"healthChecks":` + p.healthChecks + ","
	}
	return fmtSpec(`{"apiVersion":"v4","kind":"process","metadata":{"name":%q,"namespace":%q,"labels":{"app":%q}},
		"restartPolicy":{"policy":"Never"},"killPolicy":{"gracePeriod":1},%s
		"spec":{"instance":%d,"template":{"spec":{"processes":[{"procName":"busybox","startGracePeriod":1,
			"startCmd":%q,
			"ports":[{"name":"http","hostPort":%d,"protocol":"http"}],%s
			"resources":{"limits":{"cpu":%q,"memory":"32"}}}]}}}}`,
		p.name, p.ns, p.name, constraint, p.instances, "mkdir -p www && "+p.prepare+" && exec busybox httpd -f -p $PORT_http -h www",
		p.hostPort, health, p.cpu)
}

func (s *devServer) applySpec(t *testing.T, spec string) {
	t.Helper()
	r := s.berth(spec, "apply", "-f", "-")
	if r.code != 0 {
		t.Fatalf("apply: %s%s", r.stdout, r.stderr)
	}
}

// running waits for n Running task groups of owner and returns them.
func (s *devServer) running(t *testing.T, ns, owner string, n int) []*v4.TaskGroup {
	t.Helper()
	var tgs []*v4.TaskGroup
	waitUntil(t, 60*time.Second, strconv.Itoa(n)+" running instances of "+owner, func() bool {
		tgs = s.taskGroups(ns, owner)
		running := 0
		for _, tg := range tgs {
			if tg.Status.Phase == v4.StatusRunning {
				running++
			}
		}
		return running == n && len(tgs) == n
	})
	return tgs
}

func pidOf(tg *v4.TaskGroup) int {
	if len(tg.Status.Tasks) == 0 {
		return 0
	}
	return tg.Status.Tasks[0].Info.Pid
}

func port(tg *v4.TaskGroup, name string) int {
	for _, p := range tg.Spec.Ports {
		if p.Name == name {
			return p.HostPort
		}
	}
	return 0
}

func alive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil && !zombie(pid) }

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z'
}

// Three instances on three agents (nodes on this machine): the package comes from a
// server with basic auth, one port is fixed and one random, variables are rendered, and
// an HTTP health check passes; the commands and PORT_ env reach the processes.
func TestProcessApplicationRunsHealthy(t *testing.T) {
	s, pkgs, _ := startWebDemoNodes(t, "32100-32199", "32200-32299", "32300-32399")
	s.cleanupProcesses("e2e")
	spec := webDemo(pkgs, "e2e", "web", 3)
	spec.extraPorts = `,{"name":"admin","hostPort":29323,"protocol":"tcp"}`
	spec.health = `[{"type":"HTTP","intervalSeconds":2,"timeoutSeconds":1,"gracePeriodSeconds":5,"consecutiveFailures":3,"http":{"portName":"http","path":"/healthz"}}]`
	s.applySpec(t, spec.json())
	tgs := s.running(t, "e2e", "web", 3)
	nodes := map[string]bool{}
	for _, tg := range tgs {
		nodes[tg.Spec.Node] = true
		httpPort := port(tg, "http")
		// The random port comes from the node's range; the command line was rendered.
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pidOf(tg)) + "/cmdline")
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		wantPid := "/" + tg.Metadata.Namespace + "." + tg.Metadata.Name + "/run/web.pid"
		if len(args) < 5 || args[2] != strconv.Itoa(httpPort) || !strings.HasSuffix(args[4], wantPid) {
			t.Errorf("instance %d: command line %q, want port %d and pid file ...%s", tg.Spec.Index, args, httpPort, wantPid)
		}
		code, env, err := httpGet("http://127.0.0.1:" + strconv.Itoa(httpPort) + "/env")
		if err != nil || code != 200 {
			t.Fatalf("instance %d: GET /env: %d %v", tg.Spec.Index, code, err)
		}
		want := []string{
			"PORT_http=" + strconv.Itoa(httpPort), "PORT_admin=29323", "BCS_NODE_IP=127.0.0.1", "BCS_POD_ID=" + tg.Metadata.Name,
			"GREETING=hi from web." + strconv.Itoa(tg.Spec.Index) + " on 127.0.0.1",
			filepath.Join("/pods", "e2e."+tg.Metadata.Name, "work", "e2e.web."+strconv.Itoa(tg.Spec.Index)) + "\n", // WORK=${workPath}
		}
		for _, w := range want {
			if !strings.Contains(env, w) {
				t.Errorf("instance %d: env lacks %q:\n%s", tg.Spec.Index, w, env)
			}
		}
	}
	if len(nodes) != 3 {
		t.Errorf("the fixed port 29323 allows one instance per node: got nodes %v", nodes)
	}
	waitUntil(t, 30*time.Second, "all healthy and the process Running", func() bool {
		for _, tg := range s.taskGroups("e2e", "web") {
			if tg.Status.Healthy == nil || !*tg.Status.Healthy {
				return false
			}
		}
		st := s.processStatus("e2e", "web")
		return st.Phase == v4.AppRunning && st.Running == 3
	})
	if out := s.mustBerth("logs", tgs[0].Metadata.Name, "-n", "e2e"); !strings.Contains(out, "web-demo listening on") {
		t.Errorf("berth logs: %q", out)
	}
}

// SIGKILL a process: it is replaced after interval + n*backoff, and maxtimes ends it.
func TestKilledProcessRestartsWithDelayUntilMaxTimes(t *testing.T) {
	s, pkgs, _ := startWebDemoNodes(t, "32100-32199")
	s.cleanupProcesses("e2e")
	spec := webDemo(pkgs, "e2e", "crashy", 1)
	spec.restart = `{"policy":"OnFailure","interval":2,"backoff":2,"maxtimes":2}`
	s.applySpec(t, spec.json())
	for attempt, delay := range []time.Duration{2 * time.Second, 4 * time.Second} {
		tg := s.running(t, "e2e", "crashy", 1)[0]
		if tg.Spec.ReschedTimes != attempt {
			t.Fatalf("run %d has reschedTimes %d", attempt, tg.Spec.ReschedTimes)
		}
		killed := time.Now()
		if err := syscall.Kill(pidOf(tg), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		var next *v4.TaskGroup
		waitUntil(t, 30*time.Second, "a replacement", func() bool {
			for _, c := range s.taskGroups("e2e", "crashy") {
				if c.Metadata.Name != tg.Metadata.Name {
					next = c
					return true
				}
			}
			return false
		})
		// The replacement is created after the delay (creation time has whole seconds).
		if took := next.Metadata.CreationTimestamp.Sub(killed.Truncate(time.Second)); took < delay || took > delay+10*time.Second {
			t.Errorf("restart %d came %v after the kill, want %v (plus detection)", attempt+1, took, delay)
		}
	}
	last := s.running(t, "e2e", "crashy", 1)[0]
	syscall.Kill(pidOf(last), syscall.SIGKILL)
	waitUntil(t, 30*time.Second, "maxtimes reached", func() bool {
		st := s.processStatus("e2e", "crashy")
		return st.Phase == v4.AppAbnormal && strings.Contains(st.Message, "maxtimes 2 reached")
	})
	time.Sleep(4 * time.Second)
	if tgs := s.taskGroups("e2e", "crashy"); len(tgs) != 1 || tgs[0].Metadata.Name != last.Metadata.Name || tgs[0].Status.Phase != v4.StatusFailed {
		t.Errorf("after maxtimes the instance must stay Failed: %d task groups", len(tgs))
	}
	desc := s.mustBerth("describe", "process", "crashy", "-n", "e2e")
	if !strings.Contains(desc, "maxtimes 2 reached") || !strings.Contains(desc, "exit") {
		t.Errorf("describe:\n%s", desc)
	}
}

// A health check that starts failing kills the group after consecutiveFailures, and the
// restart policy replaces it.
func TestFailingHealthCheckRestarts(t *testing.T) {
	s, pkgs, _ := startWebDemoNodes(t, "32100-32199")
	s.cleanupProcesses("e2e")
	spec := webDemo(pkgs, "e2e", "sick", 1)
	spec.health = `[{"type":"HTTP","intervalSeconds":2,"timeoutSeconds":1,"gracePeriodSeconds":1,"consecutiveFailures":2,"http":{"portName":"http","path":"/healthz"}}]`
	s.applySpec(t, spec.json())
	tg := s.running(t, "e2e", "sick", 1)[0]
	waitUntil(t, 20*time.Second, "healthy", func() bool {
		tgs := s.taskGroups("e2e", "sick")
		return len(tgs) == 1 && tgs[0].Status.Healthy != nil && *tgs[0].Status.Healthy
	})
	resp, err := httpPost("http://127.0.0.1:" + strconv.Itoa(port(tg, "http")) + "/fail")
	if err != nil || resp != 200 {
		t.Fatalf("POST /fail: %d %v", resp, err)
	}
	waitUntil(t, 30*time.Second, "a replacement after the health kill", func() bool {
		tgs := s.taskGroups("e2e", "sick")
		return len(tgs) == 1 && tgs[0].Metadata.Name != tg.Metadata.Name && tgs[0].Spec.ReschedTimes == 1
	})
	if alive(pidOf(tg)) {
		t.Errorf("the unhealthy process %d still runs", pidOf(tg))
	}
	s.eventsSay("health check failed 2 times", "-n", "e2e")
}

// Scale 3 -> 5 -> 2 keeps the lowest indexes; delete leaves no process, cgroup or port.
func TestScaleAndDeleteCleanUp(t *testing.T) {
	s, pkgs, agents := startWebDemoNodes(t, "32100-32199")
	a := agents[0]
	s.cleanupProcesses("e2e")
	spec := webDemo(pkgs, "e2e", "scaled", 3)
	s.applySpec(t, spec.json())
	s.running(t, "e2e", "scaled", 3)
	s.mustBerth("scale", "process", "scaled", "5", "-n", "e2e")
	s.running(t, "e2e", "scaled", 5)
	s.mustBerth("scale", "process", "scaled", "2", "-n", "e2e")
	tgs := s.running(t, "e2e", "scaled", 2)
	var idx []int
	var pids, ports []int
	for _, tg := range tgs {
		idx = append(idx, tg.Spec.Index)
		pids = append(pids, pidOf(tg))
		ports = append(ports, port(tg, "http"))
	}
	slices.Sort(idx)
	if !slices.Equal(idx, []int{0, 1}) {
		t.Fatalf("scale down must keep indexes 0 and 1, got %v", idx)
	}
	s.mustBerth("delete", "process", "scaled", "-n", "e2e")
	waitUntil(t, 30*time.Second, "no task groups", func() bool { return len(s.taskGroups("e2e", "scaled")) == 0 })
	waitUntil(t, 10*time.Second, "processes gone", func() bool { return !alive(pids[0]) && !alive(pids[1]) })
	for _, p := range ports {
		if _, _, err := httpGet("http://127.0.0.1:" + strconv.Itoa(p) + "/healthz"); err == nil {
			t.Errorf("port %d still answers", p)
		}
	}
	for _, tg := range tgs {
		id := "e2e." + tg.Metadata.Name + ".web-demo"
		for _, dir := range []string{"/sys/fs/cgroup/memory/berth/" + id, "/sys/fs/cgroup/cpu/berth/" + id, "/sys/fs/cgroup/berth/" + id} {
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("cgroup %s left behind", dir)
			}
		}
		if _, err := os.Stat(filepath.Join(a.dataDir, "pods", "e2e."+tg.Metadata.Name)); err == nil {
			t.Errorf("pod directory of %s left behind", tg.Metadata.Name)
		}
	}
}

// SIGKILL the agent while three instances run: when it comes back it adopts them (same
// PIDs), starts no second copy and reports them Running.
func TestAgentRestartAdoptsRunningProcesses(t *testing.T) {
	s, pkgs, agents := startWebDemoNodes(t, "32100-32199")
	a := agents[0]
	s.cleanupProcesses("e2e")
	s.applySpec(t, webDemo(pkgs, "e2e", "steady", 3).json())
	before := map[string]int{}
	for _, tg := range s.running(t, "e2e", "steady", 3) {
		before[tg.Metadata.Name] = pidOf(tg)
	}
	a.kill()
	for name, pid := range before {
		if !alive(pid) {
			t.Fatalf("killing the agent killed %s (pid %d)", name, pid)
		}
	}
	a.start()
	time.Sleep(8 * time.Second) // a few heartbeats and a full report
	after := s.running(t, "e2e", "steady", 3)
	for _, tg := range after {
		if want, ok := before[tg.Metadata.Name]; !ok || pidOf(tg) != want {
			t.Errorf("%s: pid %d after the restart, want %d (adopted)", tg.Metadata.Name, pidOf(tg), want)
		}
	}
	if count := webDemoProcesses(a.dataDir); count != 3 {
		t.Errorf("%d web-demo processes of this agent run, want exactly 3 (no duplicates)", count)
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// webDemoProcesses counts the live web-demo processes working under dir (an agent's data
// dir): what really runs on that "node", whatever the API says.
func webDemoProcesses(dir string) int {
	count := 0
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err == nil && strings.TrimSpace(string(comm)) == "web-demo" && !zombie(atoi(e.Name())) {
			cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
			if strings.Contains(cwd, dir) {
				count++
			}
		}
	}
	return count
}
