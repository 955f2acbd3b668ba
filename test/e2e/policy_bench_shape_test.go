package e2e

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// benchShape is the policy benchmark's burst: apps processes of instances instances
// (0.01 core and 8 MB each), applied concurrency at a time, on nodes simulated nodes.
// The default is a short burst (2,000 instances, about a second to place) whose rate
// includes the pipeline's start: the first apply's admission, the scheduler's first
// pass. A larger one (BERTH_BENCH_POLICY_APPS, _NODES) measures the sustained rate.
type benchShape struct {
	apps, instances, nodes, concurrency int
}

// benchPolicyShape reads the shape from the environment:
//   - BERTH_BENCH_POLICY_APPS: processes (default 200, at most 10,000);
//   - BERTH_BENCH_POLICY_INSTANCES: instances a process (default 10, at most 20): more of
//     them make the admission of a process a smaller part of its placements;
//   - BERTH_BENCH_POLICY_NODES: simulated nodes (default 50, at most 2,000); a node
//     takes instancesPerNode instances, so 50 nodes of this 2-core machine hold 4,750;
//   - BERTH_BENCH_POLICY_CONCURRENCY: applies in flight (default 4, at most 64). With 4,
//     each write's own time bounds the burst's pace, the hooks' calls included; with
//     more, the server's capacity does: docs/benchmarks.md reports both.
func benchPolicyShape(b *testing.B) benchShape {
	s := benchShape{
		apps:        benchEnvInt(b, "BERTH_BENCH_POLICY_APPS", 200, 10_000),
		instances:   benchEnvInt(b, "BERTH_BENCH_POLICY_INSTANCES", 10, 20),
		nodes:       benchEnvInt(b, "BERTH_BENCH_POLICY_NODES", 50, 2_000),
		concurrency: benchEnvInt(b, "BERTH_BENCH_POLICY_CONCURRENCY", 4, 64),
	}
	if room := s.nodes * instancesPerNode(); s.apps*s.instances > room {
		b.Fatalf("%d processes of %d instances do not fit on %d nodes (about %d instances): give more BERTH_BENCH_POLICY_NODES",
			s.apps, s.instances, s.nodes, room)
	}
	return s
}

// instancesPerNode is how many of the burst's instances a simulated node takes: its
// allocatable cpu is the CPUs this process may use (taskset narrows them) less the
// agent's reserve, measured as 95 with 2 CPUs and 45 with 1.
func instancesPerNode() int { return 50*runtime.NumCPU() - 5 }

// benchEnvInt is the environment variable name as a count from 1 to most, def when unset.
func benchEnvInt(b *testing.B, name string, def, most int) int {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > most {
		b.Fatalf("%s=%q: give 1 to %d", name, v, most)
	}
	return n
}

// burstCPU is the CPU time the server, this process (the hook server and the load) and
// the whole machine had used when a burst started: where a configuration's time went.
type burstCPU struct {
	server                  int
	serverCPU, ownCPU       time.Duration
	machineBusy, machineAll time.Duration
	at                      time.Time
}

func startBurstCPU(b *testing.B, server int) burstCPU {
	busy, all := machineCPU(b)
	return burstCPU{server: server, serverCPU: cpuTimeOf(b, server), ownCPU: cpuTimeOf(b, os.Getpid()),
		machineBusy: busy, machineAll: all, at: time.Now()}
}

// end says what each used since the start.
func (c burstCPU) end(b *testing.B) string {
	busy, all := machineCPU(b)
	return fmt.Sprintf("CPU over the burst's %.1fs: server %.2fs, test process (hooks and load) %.2fs, machine %.2fs busy of %.2fs",
		time.Since(c.at).Seconds(), (cpuTimeOf(b, c.server) - c.serverCPU).Seconds(), (cpuTimeOf(b, os.Getpid()) - c.ownCPU).Seconds(),
		(busy - c.machineBusy).Seconds(), (all - c.machineAll).Seconds())
}

// machineCPU is the machine's busy and total CPU time so far (/proc/stat's first line,
// in ticks of 10 ms; idle and iowait are not busy).
func machineCPU(b *testing.B) (busy, all time.Duration) {
	b.Helper()
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		b.Fatalf("/proc/stat starts with %q", line)
	}
	var ticks, idle int64
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		ticks += n
		if i == 3 || i == 4 { // idle, iowait
			idle += n
		}
	}
	return time.Duration(ticks-idle) * 10 * time.Millisecond, time.Duration(ticks) * 10 * time.Millisecond
}
