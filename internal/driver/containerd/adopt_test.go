package containerd

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/driver"
)

// An agent that restarts (a new driver on the same containerd) lists the task still
// running, waits for it and reads its log, which went on filling while no driver was
// there; another cluster's driver sees none of it.
func TestAdoptAfterRestart(t *testing.T) {
	d1, cfg := newDriver(t, nil)
	tk := task(t, "ticker", "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.1; done")
	start(t, d1, tk)
	d1.Close()
	time.Sleep(500 * time.Millisecond) // output keeps reaching the log without a driver

	d2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := d2.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != tk.ID || !list[0].Running || list[0].Labels[driver.LabelTask] != "ticker" {
		t.Fatalf("list after restart: %+v", list)
	}
	if got := logs(t, d2, tk.ID, driver.LogOptions{}); strings.Count(got, "tick") < 3 {
		t.Fatalf("log after restart:\n%s", got)
	}
	ch, err := d2.Wait(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := d2.Stop(ctx, tk.ID, time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case st := <-ch:
		if st.Running || st.Info.ExitCode != 143 && st.Info.ExitCode != 137 {
			t.Fatalf("Wait delivered %+v", st.Info)
		}
	case <-ctx.Done():
		t.Fatal("Wait delivered nothing after Stop")
	}

	other, _ := newDriver(t, func(c *Config) {
		c.Owner = driver.Owner{Cluster: "sha256:" + strings.Repeat("cd", 32), Node: cfg.Owner.Node}
	})
	if list, err := other.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("another cluster lists %+v, %v", list, err)
	}
	if _, err := other.Inspect(ctx, tk.ID); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("another cluster inspects: %v", err)
	}
	if err := other.Remove(ctx, tk.ID); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("another cluster removes: %v", err)
	}
}

// A removed task's waiter gets driver.Gone.
func TestWaitGone(t *testing.T) {
	d, _ := newDriver(t, nil)
	tk := task(t, "gone", "sleep 300")
	start(t, d, tk)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ch, err := d.Wait(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Remove(ctx, tk.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case st := <-ch:
		if st.Running {
			t.Fatalf("Wait delivered %+v", st)
		}
	case <-ctx.Done():
		t.Fatal("Wait delivered nothing after Remove")
	}
}

// The OCI runtime is runc by default, crun when configured (through its wrapper on a
// hybrid cgroup host).
func TestRuntimes(t *testing.T) {
	for _, bin := range []string{"runc", "crun"} {
		t.Run(bin, func(t *testing.T) {
			if _, err := lookPath(bin); err != nil {
				t.Skipf("%s is not installed", bin)
			}
			d, _ := newDriver(t, func(c *Config) { c.RuntimeBinary = bin })
			tk := task(t, "rt", "echo ran; exit 5")
			tk.RunToEnd = true
			tk.MemoryLimit = 32
			start(t, d, tk)
			if st := waitEnd(t, d, tk.ID); st.Info.ExitCode != 5 {
				t.Fatalf("ended as %+v, want exit code 5", st.Info)
			}
			if st, _ := d.Inspect(context.Background(), tk.ID); st.Labels[labelRuntime] != bin {
				t.Fatalf("runtime label %q", st.Labels[labelRuntime])
			}
			if got := logs(t, d, tk.ID, driver.LogOptions{}); got != "ran\n" {
				t.Fatalf("log %q", got)
			}
		})
	}
}
