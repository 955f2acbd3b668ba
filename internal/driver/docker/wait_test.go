package docker

import (
	"context"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/drivertest"
)

// Wait delivers a container's end from Docker's event stream, several waiters of one
// task alike, and closes an abandoned wait without a value.
func TestWaitDeliversTheExit(t *testing.T) {
	d := parallelDriver(t)
	task := newTask(t, d, "w", imgPlain, "/bin/sh", "-c", `while [ ! -f /tmp/go ]; do sleep 0.05; done; exit 4`)
	mustStart(t, d, task)
	ctx := ctxT(t, 60*time.Second)

	cctx, cancel := context.WithCancel(ctx)
	abandoned, err := d.Wait(cctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if st, got := <-abandoned; got {
		t.Fatalf("an abandoned wait delivered %+v", st)
	}

	first, err := d.Wait(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	second, err := d.Wait(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	execTouch(t, d, task.ID)
	for _, ch := range []<-chan driver.State{first, second} {
		drivertest.WaitDeliversExit(t, ch, 4, 20*time.Second, "the container")
	}

	// A removed container: an unknown task.
	if err := d.Remove(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Wait(ctx, task.ID); !isNotFound(err) {
		t.Fatalf("Wait on a removed task: %v", err)
	}
}

// A container removed behind berth's back ends its waiters (with the exit Docker
// reports while it removes it, or as gone).
func TestWaitEndsWhenTheContainerIsRemoved(t *testing.T) {
	d := parallelDriver(t)
	task := newTask(t, d, "r", imgPlain, "/bin/sleep", "60")
	mustStart(t, d, task)
	ctx := ctxT(t, 60*time.Second)
	ch, err := d.Wait(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := rawRemove(ctx, containerName(task.ID)); err != nil {
		t.Fatal(err)
	}
	select {
	case st := <-ch:
		if st.Running {
			t.Fatalf("Wait delivered %+v, want an ended state", st)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Wait delivered nothing after the container was removed")
	}
}

// execTouch creates /tmp/go in the task's container.
func execTouch(t *testing.T, d *Driver, id string) {
	t.Helper()
	if _, err := d.Exec(ctxT(t, 20*time.Second), id, "touch /tmp/go"); err != nil {
		t.Fatal(err)
	}
}
