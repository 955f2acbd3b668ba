package process

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver/drivertest"
)

func TestStopEscalatesToSIGKILL(t *testing.T) {
	d := parallelTestDriver(t)
	// The shell ignores SIGTERM and keeps forking; the stop command only leaves a mark.
	task := testTask(t, "ns.stubborn.sh", &v4.ProcessTask{
		ProcName:         "sh",
		StartCmd:         `trap '' TERM; (trap '' TERM; exec sleep 60) & while :; do sleep 0.1; done`,
		StopCmd:          `echo "stop $PORT_http" > stopped.txt`,
		StartGracePeriod: 1,
	})
	task.Env = []string{"PORT_http=31001"}
	mustStart(t, d, task)
	if n := len(cgroupProcs(t, d, task.ID)); n < 2 {
		t.Fatalf("%d processes in the cgroup, want the shell and its children", n)
	}
	const grace = 800 * time.Millisecond
	begin := time.Now()
	if err := d.Stop(context.Background(), task.ID, grace); err != nil {
		t.Fatal(err)
	}
	took := time.Since(begin)
	if took < grace || took > grace+3*time.Second {
		t.Errorf("Stop took %s with grace %s", took, grace)
	}
	if got := readFile(t, filepath.Join(task.WorkBaseDir, "stopped.txt")); got != "stop 31001\n" {
		t.Errorf("stopCmd wrote %q", got)
	}
	if pids := cgroupProcs(t, d, task.ID); len(pids) != 0 {
		t.Fatalf("processes left in the cgroup after Stop: %v", pids)
	}
	st, err := d.Inspect(context.Background(), task.ID)
	if err != nil || st.Running || st.Info.ExitCode != 137 || st.Info.Message != "stopped" {
		t.Fatalf("after Stop: %+v %v", st.Info, err)
	}
}

func TestStopPolite(t *testing.T) {
	d := parallelTestDriver(t)
	task := testTask(t, "ns.polite.sleep", &v4.ProcessTask{ProcName: "sleep", StartCmd: "exec sleep 60"})
	mustStart(t, d, task)
	begin := time.Now()
	if err := d.Stop(context.Background(), task.ID, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begin); took > 2*time.Second {
		t.Errorf("SIGTERM should stop sleep at once; took %s", took)
	}
	st, _ := d.Inspect(context.Background(), task.ID)
	if st.Running || st.Info.ExitCode != 143 {
		t.Fatalf("after Stop: %+v", st.Info)
	}
}

func TestOOMKilled(t *testing.T) {
	d := parallelTestDriver(t)
	task := testTask(t, "ns.oom.sh", &v4.ProcessTask{
		ProcName:         "sh",
		StartCmd:         "sleep 1.2; dd if=/dev/zero of=/dev/null bs=64M count=1; echo survived",
		StartGracePeriod: 1,
	})
	task.MemoryLimit = 16
	mustStart(t, d, task)
	st := drivertest.WaitEnded(t, d, task.ID, 10*time.Second)
	if !st.Info.OOMKilled {
		t.Fatalf("not OOMKilled: %+v\nlog: %s", st.Info, readFile(t, filepath.Join(task.LogDir, "sh.log")))
	}
}

func TestCgroupLimits(t *testing.T) {
	d := parallelTestDriver(t)
	task := testTask(t, "ns.limits.sleep", &v4.ProcessTask{ProcName: "sleep", StartCmd: "exec sleep 30"})
	task.CPULimit = 0.5
	task.MemoryLimit = 64
	mustStart(t, d, task)
	rec, _ := d.load(task.ID)
	cg := d.loadCgroup(rec)
	read := func(ctrl, file string) string {
		t.Helper()
		return strings.TrimSpace(readFile(t, filepath.Join(cg.Dir(ctrl), file)))
	}
	mem := strconv.Itoa(64 << 20)
	if d.cgroups == cgroupV1 {
		if q, p := read("cpu", "cpu.cfs_quota_us"), read("cpu", "cpu.cfs_period_us"); q != "50000" || p != "100000" {
			t.Errorf("cfs quota %s per %s, want 50000 per 100000", q, p)
		}
		if got := read("memory", "memory.limit_in_bytes"); got != mem {
			t.Errorf("memory.limit_in_bytes %s, want %s", got, mem)
		}
		if _, err := os.Stat(filepath.Join(cg.Dir("memory"), "memory.memsw.limit_in_bytes")); err == nil {
			if got := read("memory", "memory.memsw.limit_in_bytes"); got != mem {
				t.Errorf("memory.memsw.limit_in_bytes %s, want %s (no swap)", got, mem)
			}
		}
	} else {
		if got := read("cpu", "cpu.max"); got != "50000 100000" {
			t.Errorf("cpu.max %q", got)
		}
		if got := read("memory", "memory.max"); got != mem {
			t.Errorf("memory.max %s, want %s", got, mem)
		}
	}
}
