package process

import (
	"context"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// A task's usage is read from its cgroup: the CPU time it burnt, the memory it holds and
// its limit; an unknown task is an error.
func TestUsage(t *testing.T) {
	requireCgroups(t)
	d := parallelTestDriver(t)
	task := testTask(t, "ns.usage.sleep", &v4.ProcessTask{ProcName: "sleep", StartGracePeriod: 1,
		StartCmd: `i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; exec sleep 60`})
	task.MemoryLimit = 64
	mustStart(t, d, task)
	u, err := d.Usage(context.Background(), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u.CPUSeconds < 0.05 || u.MemoryBytes == 0 || u.MemoryLimitBytes != 64<<20 {
		t.Errorf("usage %+v: want some CPU time, some memory and a 64 MiB limit", u)
	}
	if _, err := d.Usage(context.Background(), "ns.usage.none"); err == nil {
		t.Error("usage of an unknown task: no error")
	}
}
