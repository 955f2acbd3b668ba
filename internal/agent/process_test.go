package agent

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/driver/fake"
)

// With the real process driver (the default): a process without a user runs as the
// default user (berth-task for an agent running as root), survives an agent restart and
// is adopted with its PID, its output is served through the server, and deleting the
// task group kills it.
func TestRealProcessSurvivesAgentRestart(t *testing.T) {
	c := newCluster(t)
	dir := t.TempDir()
	// t.TempDir's folders are 0700: the default user must pass through them, as it does
	// through /var/lib.
	for p := filepath.Dir(dir); p != os.TempDir(); p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	// As root, the task group runs under a uid of its own from the default range
	// (80000-89999); otherwise as the agent's own user.
	wantUser := regexp.MustCompile(`as 8[0-9]{4}\b`)
	if os.Geteuid() != 0 {
		wantUser = regexp.MustCompile("as " + strconv.Itoa(os.Geteuid()) + "\\b")
	}
	real := func(cfg *Config) {
		cfg.Drivers = nil // the default: the process driver under dir/process
		cfg.CgroupParent = "berth-agent-test"
	}
	first := startAgent(t, c, dir, fake.New("unused"), real)
	tg := processTG("0.sleep.ns-a.c.1")
	tg.Spec.Template.Spec.Processes[0] = v4.ProcessTask{ProcName: "sleep", WorkPath: "${work_base_dir}/${processname}",
		StartCmd: `echo "hello from $BCS_POD_ID as $(id -u)"; echo "a warning" >&2; exec sleep 120`, StartGracePeriod: 1}
	createTG(t, tg)
	pid := waitPhase(t, "0.sleep.ns-a.c.1", v4.StatusRunning).Status.Tasks[0].Info.Pid
	if pid == 0 {
		t.Fatal("no pid")
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	first.stop()
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the process died with the agent: %v", err)
	}
	editTG(t, "0.sleep.ns-a.c.1", func(tg *v4.TaskGroup) { tg.Status.Phase = v4.StatusLost })

	startAgent(t, c, dir, fake.New("unused"), real)
	if got := waitPhase(t, "0.sleep.ns-a.c.1", v4.StatusRunning).Status.Tasks[0].Info.Pid; got != pid {
		t.Fatalf("adopted pid %d, want %d", got, pid)
	}
	cl := c.client()
	var out string
	waitFor(t, "the process's output", func() bool {
		rc, err := cl.Logs(context.Background(), testNS, "0.sleep.ns-a.c.1", client.LogOptions{})
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		out = string(b)
		return strings.Contains(out, "hello from 0.sleep.ns-a.c.1 as ") && wantUser.MatchString(out)
	})
	// Its stderr alone, from the log its shim kept while the agent was away.
	rc, err := cl.Logs(context.Background(), testNS, "0.sleep.ns-a.c.1", client.LogOptions{Stream: v4.LogStreamStderr})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "a warning\n" {
		t.Fatalf("stderr: %q (both: %q)", b, out)
	}

	if _, err := testStore.Delete(context.Background(), v4.KindTaskGroup, testNS, "0.sleep.ns-a.c.1", ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the process to be killed", func() bool { return syscall.Kill(pid, 0) != nil || isZombie(pid) })
}

// A task group the node's own policy refuses fails at start, naming the field and the
// agent's flag, even though the server admitted it; the same agent runs it once its
// operator allows it.
func TestNodePolicyRefusesPrivilegedWork(t *testing.T) {
	c := newCluster(t)
	drv := fake.New("process")
	dir := t.TempDir() // the node's identity: the restarted agent keeps its key
	ra := startAgent(t, c, dir, drv)
	tg := processTG("0.root.ns-a.c.1")
	tg.Spec.Template.Spec.Processes[0].User = "root"
	createTG(t, tg)
	got := waitPhase(t, "0.root.ns-a.c.1", v4.StatusFailed)
	if msg := got.Status.Message; !strings.Contains(msg, "spec.template.spec.processes[0].user") || !strings.Contains(msg, "--allow-privileged") {
		t.Fatalf("message %q", msg)
	}
	if len(drv.Started()) != 0 {
		t.Fatalf("the driver started %v", drv.Started())
	}
	ra.stop()

	startAgent(t, c, dir, drv, func(cfg *Config) { cfg.AllowPrivileged = true })
	tg = processTG("0.root2.ns-a.c.1")
	tg.Spec.Template.Spec.Processes[0].User = "root"
	createTG(t, tg)
	waitPhase(t, "0.root2.ns-a.c.1", v4.StatusRunning)
}

// isZombie reports whether pid has exited but is not reaped yet (its parent may be this
// test process's reaper, or init).
func isZombie(pid int) bool {
	b, err := readProcStat(pid)
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	i := strings.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}

func readProcStat(pid int) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return string(b), err
}
