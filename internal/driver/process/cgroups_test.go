package process

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// weightCases are a task's cpu weight by its tier and request, as cpu.shares (v1) and
// cpu.weight (v2): what Docker and containerd give a container of the same request.
var weightCases = []struct {
	name           string
	task           driver.Task
	shares, weight uint64
}{
	{"no request", driver.Task{}, 1024, 39},
	{"half a core", driver.Task{CPURequest: 0.5}, 512, 20},
	{"two cores, limited", driver.Task{CPURequest: 2, CPULimit: 1, MemoryLimit: 64}, 2048, 79},
	{"revocable without a request", driver.Task{Revocable: true}, 2, 1},
	{"revocable with a request", driver.Task{Revocable: true, CPURequest: 4, CPULimit: 4}, 2, 1},
}

func TestResourcesOf(t *testing.T) {
	for _, c := range weightCases {
		t.Run(c.name, func(t *testing.T) {
			r := resourcesOf(&c.task)
			want := cgroupResources{shares: c.shares, cpu: c.task.CPULimit, memMB: c.task.MemoryLimit, revocable: c.task.Revocable}
			if r != want {
				t.Fatalf("resources %+v, want %+v", r, want)
			}
			if w := driver.CPUWeight(r.shares); w != c.weight {
				t.Fatalf("cpu.weight %d, want %d", w, c.weight)
			}
		})
	}
}

// cpuWeightFile reads back the weight of a task's cgroup: cpu.shares on v1, cpu.weight
// on v2, with the value the case wants there.
func cpuWeightFile(t *testing.T, cg taskCgroup, shares, weight uint64) (got, want uint64, file string) {
	t.Helper()
	file, want = filepath.Join(cg.Dir("cpu"), "cpu.shares"), shares
	if _, ok := cg.(*cgroupV2Task); ok {
		file, want = filepath.Join(cg.Dir("cpu"), "cpu.weight"), weight
	}
	n, err := strconv.ParseUint(strings.TrimSpace(readFile(t, file)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return n, want, file
}

// The kernel holds the weight the driver gives: a real cgroup per case, read back; the
// cpu limit stays the task's.
func TestCgroupWeight(t *testing.T) {
	d := parallelTestDriver(t)
	for i, c := range weightCases {
		t.Run(c.name, func(t *testing.T) {
			id := fmt.Sprintf("ns.weight%d.a", i)
			cg, err := d.createCgroup(id, resourcesOf(&c.task))
			if err != nil || cg == nil {
				t.Fatalf("createCgroup: %v %v", cg, err)
			}
			t.Cleanup(func() { cg.Delete() })
			if got, want, file := cpuWeightFile(t, cg, c.shares, c.weight); got != want {
				t.Errorf("%s = %d, want %d", file, got, want)
			}
			if c.task.CPULimit > 0 {
				file, want := filepath.Join(cg.Dir("cpu"), "cpu.cfs_quota_us"), strconv.Itoa(int(c.task.CPULimit*100000))
				if _, ok := cg.(*cgroupV2Task); ok {
					file, want = filepath.Join(cg.Dir("cpu"), "cpu.max"), want+" 100000"
				}
				if got := strings.TrimSpace(readFile(t, file)); got != want {
					t.Errorf("%s = %q, want %q", file, got, want)
				}
			}
		})
	}
}

// A started revocable task runs in a cgroup of the lowest weight, whatever it asks.
func TestStartRevocableWeight(t *testing.T) {
	d := parallelTestDriver(t)
	task := testTask(t, "ns.revocable.sleep", &v4.ProcessTask{ProcName: "sleep", StartCmd: "exec sleep 30"})
	task.Revocable, task.CPURequest = true, 2
	mustStart(t, d, task)
	st, err := d.load(task.ID)
	if err != nil {
		t.Fatal(err)
	}
	cg := d.loadCgroup(st)
	if cg == nil {
		t.Fatal("the revocable task has no cgroup")
	}
	if got, want, file := cpuWeightFile(t, cg, 2, 1); got != want {
		t.Errorf("%s = %d, want %d", file, got, want)
	}
}
