package agent

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/fake"
	"github.com/berthhq/berth/internal/executor"
)

// fakePods is the executor as a node sample reads it: pods and their tasks' usage.
type fakePods struct {
	pods  []executor.PodRef
	usage map[string][]v4.TaskUsage // by pod name
}

func (f *fakePods) List() []executor.PodRef { return f.pods }

func (f *fakePods) Usage(_ context.Context, _, name string) ([]v4.TaskUsage, error) {
	return f.usage[name], nil
}

// writeProc writes a /proc/stat of two CPUs with busy and idle ticks, and a meminfo.
func writeProc(t *testing.T, dir string, busy, idle int, availKB int) (stat, mem string) {
	t.Helper()
	stat, mem = filepath.Join(dir, "stat"), filepath.Join(dir, "meminfo")
	// user nice system idle iowait irq softirq steal guest guest_nice: busy in user, idle in idle.
	s := "cpu  " + itoa(busy) + " 0 0 " + itoa(idle) + " 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0 0 0\nintr 1\n"
	m := "MemTotal:        8000000 kB\nMemFree:          100000 kB\nMemAvailable:     " + itoa(availKB) + " kB\n"
	if err := os.WriteFile(stat, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mem, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	return stat, mem
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestNodeSamplerRatesFromTwoSamples(t *testing.T) {
	dir := t.TempDir()
	stat, mem := writeProc(t, dir, 1000, 3000, 6000000)
	pods := &fakePods{
		pods: []executor.PodRef{
			{Namespace: "ns", Name: "a", Status: v4.TaskGroupStatus{Phase: v4.StatusRunning}},
			{Namespace: "ns", Name: "b", Status: v4.TaskGroupStatus{Phase: v4.StatusRunning}},
			{Namespace: "ns", Name: "ended", Status: v4.TaskGroupStatus{Phase: v4.StatusFinish}},
		},
		usage: map[string][]v4.TaskUsage{
			"a":     {{Name: "web", CPUSeconds: 10, MemoryBytes: 100 << 20}, {Name: "side", Error: "not started"}},
			"b":     {{Name: "web", CPUSeconds: 4, MemoryBytes: 50 << 20}},
			"ended": {{Name: "web", CPUSeconds: 99, MemoryBytes: 1 << 30}},
		},
	}
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	s := &nodeSampler{pods: pods, procStat: stat, meminfo: mem, now: func() time.Time { return now }}

	first := s.sample(context.Background())
	if first.WindowSeconds != 0 || first.Host.CPUCores != 0 || first.Instances.CPUCores != 0 {
		t.Fatalf("a first sample has no rates: %+v", first)
	}
	if first.Host.MemoryTotalBytes != 8000000<<10 || first.Host.MemoryBytes != 2000000<<10 || first.Host.CPUSeconds != 10 || first.Host.Error != "" {
		t.Fatalf("host %+v", first.Host)
	}
	if in := first.Instances; in.Count != 2 || in.Tasks != 2 || in.Unmeasured != 1 || in.MemoryBytes != 150<<20 {
		t.Fatalf("instances %+v, want the two running pods' measured tasks", in)
	}

	// Within the interval, callers share the sample: nothing is read again.
	pods.usage["a"][0].MemoryBytes = 1
	now = now.Add(time.Second)
	if again := s.sample(context.Background()); again.Instances.MemoryBytes != 150<<20 || !again.Time.Equal(first.Time) {
		t.Fatalf("a sample inside the interval: %+v", again.Instances)
	}

	// 4 s later: the host's 2 CPUs were busy half the time (1 core); a's web used 2 CPU
	// seconds (0.5 cores) and b restarted (its counter went back: no rate).
	now = now.Add(3 * time.Second)
	writeProc(t, dir, 1400, 3400, 6000000)
	pods.usage["a"][0] = v4.TaskUsage{Name: "web", CPUSeconds: 12, MemoryBytes: 100 << 20}
	pods.usage["b"][0] = v4.TaskUsage{Name: "web", CPUSeconds: 1, MemoryBytes: 50 << 20}
	second := s.sample(context.Background())
	if second.WindowSeconds != 4 || second.Host.CPUCores != 1 || second.Instances.CPUCores != 0.5 {
		t.Fatalf("second sample: window %v, host %v cores, instances %v cores", second.WindowSeconds, second.Host.CPUCores, second.Instances.CPUCores)
	}
}

func TestNodeSamplerSaysWhatItCannotRead(t *testing.T) {
	s := &nodeSampler{pods: &fakePods{}, procStat: "/nonexistent/stat", meminfo: "/nonexistent/meminfo", now: time.Now}
	u := s.sample(context.Background())
	if u.Host.Error == "" || u.Host.MemoryBytes != 0 || u.Instances.Count != 0 {
		t.Fatalf("usage %+v, want the host's error", u)
	}
}

// The node's usage through the server: the agent sums its instances as the fake driver
// measures them, and the server adds what the node reserves.
func TestNodeUsageThroughServerAndAgent(t *testing.T) {
	c := newCluster(t)
	drv := fake.New("process")
	startAgent(t, c, t.TempDir(), drv)
	createTG(t, processTG("0.web.ns-a.c.1"))
	waitPhase(t, "0.web.ns-a.c.1", v4.StatusRunning)
	drv.SetUsage(testNS+".0.web.ns-a.c.1.web", driver.Usage{CPUSeconds: 3, MemoryBytes: 5 << 20})
	u, err := c.client().NodeUsage(context.Background(), testNode)
	if err != nil {
		t.Fatal(err)
	}
	if u.Node != testNode || u.Instances.Count != 1 || u.Instances.Tasks != 1 || u.Instances.MemoryBytes != 5<<20 ||
		u.Host.MemoryTotalBytes == 0 || u.Allocatable.CPU <= 0 {
		t.Fatalf("node usage %+v", u)
	}
	if _, err := c.client().NodeUsage(context.Background(), "nope"); err == nil {
		t.Fatal("the usage of an unknown node: no error")
	}
}

// BenchmarkNodeSample is one sample of a node of 500 instances of two tasks each (the
// driver reads faked): what an answer costs the agent besides the drivers' own reads.
func BenchmarkNodeSample(b *testing.B) {
	pods := &fakePods{usage: map[string][]v4.TaskUsage{}}
	for i := range 500 {
		name := "p" + strconv.Itoa(i)
		pods.pods = append(pods.pods, executor.PodRef{Namespace: "ns", Name: name, Status: v4.TaskGroupStatus{Phase: v4.StatusRunning}})
		pods.usage[name] = []v4.TaskUsage{{Name: "a", CPUSeconds: 1, MemoryBytes: 1 << 20}, {Name: "b", CPUSeconds: 2, MemoryBytes: 2 << 20}}
	}
	now := time.Now()
	s := &nodeSampler{pods: pods, procStat: "/proc/stat", meminfo: "/proc/meminfo", now: func() time.Time { return now }}
	for b.Loop() {
		now = now.Add(nodeUsageInterval) // every call samples anew
		s.sample(context.Background())
	}
}
