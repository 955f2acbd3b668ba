package e2e

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/pki"
)

// twinDev is one of two `berth dev`s on this machine whose nodes have the same name.
type twinDev struct {
	name    string // for messages
	dataDir string
	flags   []string
	ports   [2]int // its --port-range
	cluster string // its cluster's ID: its CA's hash
	s       *devServer
	// pid and container are its process workload's process and its container
	// workload's container.
	pid       int
	container string
}

// twinProcess is a process of one instance with a random port that sleeps.
const twinProcess = `{"apiVersion":"v4","kind":"process","metadata":{"name":"p","namespace":"e2e","labels":{"app":"p"}},
	"restartPolicy":{"policy":"Never"},"killPolicy":{"gracePeriod":1},
	"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"sleep","startCmd":"exec sleep 100000","startGracePeriod":1,
		"ports":[{"name":"http","hostPort":0,"protocol":"http"}],"resources":{"limits":{"cpu":"0.1","memory":"32"}}}]}}}}`

// start runs d's berth dev and learns its cluster's ID. Its workloads are deleted when
// the test ends, before it stops.
func (d *twinDev) start(t *testing.T) {
	t.Helper()
	d.s = startDev(t, d.dataDir, d.flags...)
	d.s.cleanupProcesses("e2e")
	d.s.cleanupApps("e2e")
	b, err := os.ReadFile(caFileOf(d.dataDir))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := pki.ParseCertificate(b)
	if err != nil {
		t.Fatal(err)
	}
	d.cluster = pki.Hash(ca)
}

// workloads waits for d's process and container to run and returns their pid and
// container ID, checking that the host ports are from d's port range.
func (d *twinDev) workloads(t *testing.T) (int, string) {
	t.Helper()
	p := d.s.running(t, "e2e", "p", 1)[0]
	c := d.s.running(t, "e2e", "c", 1)[0]
	for _, tg := range []*v4.TaskGroup{p, c} {
		if hp := port(tg, "http"); hp < d.ports[0] || hp > d.ports[1] {
			t.Errorf("%s: %s has host port %d, outside its --port-range %d-%d", d.name, tg.Metadata.Name, hp, d.ports[0], d.ports[1])
		}
		if tg.Spec.Node != "twin" {
			t.Errorf("%s: %s is on node %q", d.name, tg.Metadata.Name, tg.Spec.Node)
		}
	}
	return pidOf(p), containerIDs(c)[0]
}

// untouched checks that d's workloads are the ones recorded, still running.
func (d *twinDev) untouched(t *testing.T, when string) {
	t.Helper()
	if !alive(d.pid) {
		t.Errorf("%s: %s: its process %d is gone", d.name, when, d.pid)
	}
	if st := inspect(t, d.container, "{{.State.Status}} {{.State.StartedAt}}"); !strings.HasPrefix(st, "running ") {
		t.Errorf("%s: %s: its container %.12s is %s", d.name, when, d.container, st)
	}
}

// deleteWorkloads deletes d's process and application and waits until their task
// groups, its cluster's containers and its process are gone.
func (d *twinDev) deleteWorkloads(t *testing.T) {
	t.Helper()
	d.s.mustBerth("delete", "process", "p", "-n", "e2e")
	d.s.mustBerth("delete", "application", "c", "-n", "e2e")
	waitUntil(t, 30*time.Second, d.name+"'s workloads to go", func() bool {
		return len(d.s.taskGroups("e2e", "p")) == 0 && len(d.s.taskGroups("e2e", "c")) == 0 &&
			len(clusterContainers(t, d.cluster)) == 0 && !alive(d.pid)
	})
}

// clusterContainers lists the containers (all) labelled with cluster.
func clusterContainers(t *testing.T, cluster string) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--no-trunc", "--filter", "label="+driver.LabelCluster+"="+cluster).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	return strings.Fields(string(out))
}

// Two berth devs side by side on one machine, with their own data dirs, listen ports,
// port ranges and task uid ranges but the SAME node name: what an agent stops, adopts or
// removes is decided by its cluster's ID (its CA's hash), not by the node's name. Each
// runs a process and a container workload; restarting one dev leaves the other's running
// and untouched (same pids and container IDs) and adopts its own, and deleting one's
// workloads never touches the other's.
func TestTwoDevClustersOnOneMachineLeaveEachOtherAlone(t *testing.T) {
	requireDocker(t)
	devs := []*twinDev{
		{name: "dev A", ports: [2]int{29800, 29849}, flags: []string{"--task-uid-range", "82000-82099"}},
		{name: "dev B", ports: [2]int{29850, 29899}, flags: []string{"--task-uid-range", "82100-82199"}},
	}
	for _, d := range devs {
		d.dataDir = t.TempDir()
		d.flags = append(d.flags, "--node-name", "twin", "--port-range", fmtSpec("%d-%d", d.ports[0], d.ports[1]))
		// Whatever a failed test leaves goes once the devs have stopped.
		t.Cleanup(func() {
			if ids := clusterContainers(t, d.cluster); d.cluster != "" && len(ids) > 0 {
				exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).Run()
			}
			if alive(d.pid) {
				syscall.Kill(d.pid, syscall.SIGKILL)
			}
		})
		d.start(t)
	}
	a, b := devs[0], devs[1]
	if a.cluster == b.cluster {
		t.Fatalf("both devs are of cluster %s", a.cluster)
	}
	// The container stops at once when asked to (a stop by the wrong agent shows).
	app := appSpec{name: "c", ns: "e2e", containers: []string{container("main", `trap "exit 0" TERM; while :; do sleep 0.2; done`,
		`,"ports":[{"name":"http","containerPort":8080,"hostPort":0,"protocol":"http"}]`)}}.json()
	for _, d := range devs {
		d.s.applySpec(t, twinProcess)
		d.s.applySpec(t, app)
	}
	for _, d := range devs {
		d.pid, d.container = d.workloads(t)
		if got := inspect(t, d.container, `{{index .Config.Labels "`+driver.LabelCluster+`"}} {{index .Config.Labels "`+driver.LabelNode+`"}}`); got != d.cluster+" twin" {
			t.Errorf("%s: its container is labelled %q, want its cluster and node", d.name, got)
		}
	}

	// A restart of dev A: dev B's workloads are not A's to stop; A adopts its own.
	a.s.stop()
	restarted := time.Now()
	a.start(t)
	waitUntil(t, 30*time.Second, "dev A to adopt its workloads", func() bool {
		n := 0
		for _, owner := range []string{"p", "c"} {
			for _, tg := range a.s.taskGroups("e2e", owner) {
				if tg.Status.Phase == v4.StatusRunning && tg.Status.Updated.After(restarted) {
					n++
				}
			}
		}
		return n == 2
	})
	// Reconcile is done once the adoptions are reported; a wrongful stop of B's container
	// (which ends on SIGTERM) would show within this pause.
	time.Sleep(3 * time.Second)
	if pid, id := a.workloads(t); pid != a.pid || id != a.container {
		t.Errorf("dev A: after its restart pid %d and container %.12s, want %d and %.12s adopted", pid, id, a.pid, a.container)
	}
	for _, d := range devs {
		d.untouched(t, "after dev A's restart")
	}
	if pid, id := b.workloads(t); pid != b.pid || id != b.container {
		t.Errorf("dev B: after dev A's restart pid %d and container %.12s, want %d and %.12s", pid, id, b.pid, b.container)
	}

	// Deleting dev A's workloads stops and removes A's alone.
	a.deleteWorkloads(t)
	time.Sleep(time.Second)
	b.untouched(t, "after dev A's workloads were deleted")
	if pid, id := b.workloads(t); pid != b.pid || id != b.container {
		t.Errorf("dev B: after dev A's deletions pid %d and container %.12s, want %d and %.12s", pid, id, b.pid, b.container)
	}
	// And dev B still removes its own.
	b.deleteWorkloads(t)
}
