package docker

import (
	"testing"
	"time"
)

// A running container's usage is one sample from the daemon: CPU time, memory and its
// limit; a container without a limit of its own reports none.
func TestUsage(t *testing.T) {
	d := parallelDriver(t)
	limited := newTask(t, d, "limited", imgPlain, "/bin/sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; exec sleep 30")
	limited.MemoryLimit = 64
	mustStart(t, d, limited)
	free := newTask(t, d, "free", imgPlain, "/bin/sleep", "30")
	mustStart(t, d, free)
	// The loop ends well within a few seconds; its CPU time is what the sample shows.
	var cpu float64
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		u, err := d.Usage(ctxT(t, 10*time.Second), limited.ID)
		if err != nil {
			t.Fatal(err)
		}
		if u.MemoryBytes == 0 || u.MemoryLimitBytes != 64<<20 {
			t.Fatalf("usage %+v: want some memory and a 64 MiB limit", u)
		}
		if cpu = u.CPUSeconds; cpu >= 0.05 {
			break
		}
	}
	if cpu < 0.05 {
		t.Errorf("the busy container used %.3f s of CPU", cpu)
	}
	if u, err := d.Usage(ctxT(t, 10*time.Second), free.ID); err != nil || u.MemoryLimitBytes != 0 {
		t.Errorf("usage of a container without a limit: %+v %v", u, err)
	}
	if _, err := d.Usage(ctxT(t, 10*time.Second), "test."+runTag+".none"); err == nil {
		t.Error("usage of an unknown task: no error")
	}
}
