package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver/containerd"
	"github.com/berthhq/berth/internal/driver/drivertest"
)

// Container pods on an agent with --container-runtime containerd, against a containerd
// the test starts (its own root, state and socket): a HOST-mode pod of two containers,
// the second in the first's network, with berth logs and berth exec; and a pod whose
// task exits, reported with its exit code; a BRIDGE pod through the node's CNI network
// and a NONE pod with a network holder (containerd_net_test.go). The node reports its
// runtime.
func TestContainerdRuntime(t *testing.T) {
	requireRoot(t)
	if why := drivertest.ContainerdMissing(); why != "" {
		if os.Getenv("BERTH_REQUIRE_CONTAINERD") == "1" {
			t.Fatal("BERTH_REQUIRE_CONTAINERD=1 but:", why)
		}
		t.Skip(why)
	}
	ctd := startTestContainerd(t)
	cni := containerdCNI(t)
	s := startServer(t, t.TempDir())
	args := []string{"--container-runtime", "containerd", "--containerd-address", ctd.Address,
		"--allow-privileged"} // HOST networking is a privilege
	if cni.confDir != "" {
		args = append(args, "--cni-conf-dir", cni.confDir)
	}
	a := startAgent(t, s, "ctd-node", "29350-29399", args...)
	s.cleanupApps("e2e")
	waitUntil(t, 30*time.Second, "the node's runtime attribute", func() bool {
		return strings.Contains(s.mustBerth("get", "node", a.name, "-o", "json"), `"berth.io/container-runtime": "containerd"`)
	})
	t.Run("a HOST pod of two containers sharing a network", func(t *testing.T) { containerdHostPod(t, s) })
	t.Run("a task that exits", func(t *testing.T) { containerdExit(t, s) })
	t.Run("a BRIDGE pod with an init task and a host port, through CNI", func(t *testing.T) { containerdBridgePod(t, s, cni, ctd.Address) })
	t.Run("a NONE pod with an init task, through a network holder", func(t *testing.T) { containerdHolderPod(t, s) })
	t.Run("the same pod on Docker and on containerd", func(t *testing.T) {
		cni.require(t)
		requireDocker(t)
		d := startDockerAgent(t, s, "ctd-docker", "29450-29499")
		sameOnBoth(t, s, d.name, a.name)
	})
}

// startTestContainerd starts a private containerd with the busybox image imported into
// berth's namespace; at the end it removes what is left there and stops it.
func startTestContainerd(t *testing.T) *drivertest.Containerd {
	t.Helper()
	dir, err := os.MkdirTemp("", "ctd") // short: the socket's path must fit
	if err != nil {
		t.Fatal(err)
	}
	ctd, err := drivertest.StartContainerd(dir)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctd.Sweep(containerd.DefaultNamespace)
		ctd.Stop()
		os.RemoveAll(dir)
	})
	d, err := containerd.New(containerd.Config{Address: ctd.Address, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	archive, err := drivertest.BusyboxArchive()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := d.Import(ctx, archive); err != nil {
		t.Fatal(err)
	}
	return ctd
}

func containerdHostPod(t *testing.T, s *devServer) {
	s.applySpec(t, appSpec{name: "ctd-pod", ns: "e2e", mode: "HOST", containers: []string{
		container("web", "echo web-started; echo web-err >&2; exec sleep 100000", ""),
		container("side", "echo side-started; exec sleep 100000", ""),
	}}.json())
	tg := s.running(t, "e2e", "ctd-pod", 1)[0]
	name := tg.Metadata.Name
	waitUntil(t, 20*time.Second, "web's log", func() bool {
		return strings.Contains(s.mustBerth("logs", name, "-n", "e2e", "-t", "web"), "web-started")
	})
	if out := s.mustBerth("logs", name, "-n", "e2e", "-t", "web", "--stderr"); strings.TrimSpace(out) != "web-err" {
		t.Errorf("web's stderr %q", out)
	}
	netns := func(task string) string {
		r := s.execIn("e2e", name, task, "sh", "-c", "ls -l /proc/self/ns/net")
		if r.code != 0 {
			t.Fatalf("exec in %s: exit %d: %s", task, r.code, r.stderr)
		}
		_, ns, _ := strings.Cut(strings.TrimSpace(r.stdout), "-> ")
		return ns
	}
	host, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	if web, side := netns("web"), netns("side"); web != host || side != host {
		t.Errorf("web in %q, side in %q: want the host's %q", web, side, host)
	}
	if r := s.execIn("e2e", name, "side", "sh", "-c", "exit 3"); r.code != 3 {
		t.Errorf("exec exit code %d, want 3", r.code)
	}
	s.mustBerth("delete", "application", "ctd-pod", "-n", "e2e")
	waitUntil(t, 60*time.Second, "the pod's end", func() bool { return len(s.taskGroups("e2e", "ctd-pod")) == 0 })
}

func containerdExit(t *testing.T, s *devServer) {
	s.applySpec(t, appSpec{name: "ctd-exit", ns: "e2e", mode: "HOST", containers: []string{
		container("job", "sleep 1; echo done; exit 4", ""), // running at its start, then ends
	}}.json())
	var task v4.TaskStatus
	waitUntil(t, 60*time.Second, "the task's end", func() bool {
		tgs := s.taskGroups("e2e", "ctd-exit")
		if len(tgs) != 1 || len(tgs[0].Status.Tasks) != 1 {
			return false
		}
		task = tgs[0].Status.Tasks[0]
		return task.Info.FinishAt.After(task.Info.StartAt)
	})
	if task.Info.ExitCode != 4 {
		t.Errorf("task ended as %+v, want exit code 4", task.Info)
	}
	s.mustBerth("delete", "application", "ctd-exit", "-n", "e2e")
}
