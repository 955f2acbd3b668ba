// Package drivertest holds the checks the task drivers' tests (internal/driver/process
// and internal/driver/docker) share: waiting for a task to end, by polling Inspect or on
// Wait's channel; the test images; and the lock that keeps a test from restarting the
// machine's dockerd while another test process uses it. Only tests import it.
package drivertest

import (
	"context"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/driver"
)

// Inspector is the part of a driver.Driver that WaitEnded polls.
type Inspector interface {
	Inspect(ctx context.Context, id string) (driver.State, error)
}

// WaitEnded polls Inspect until task id is not running and returns its state; it fails
// the test when the task still runs after within.
func WaitEnded(t testing.TB, d Inspector, id string, within time.Duration) driver.State {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		st, err := d.Inspect(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Running {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still running after %s: %+v", id, within, st.Info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitDeliversExit requires ch (from Wait) to deliver, within the limit, an ended state
// with exit code code; what names what exited, for the failure.
func WaitDeliversExit(t testing.TB, ch <-chan driver.State, code int, within time.Duration, what string) {
	t.Helper()
	select {
	case st := <-ch:
		if st.Running || st.Info.ExitCode != code {
			t.Fatalf("Wait delivered %+v, want exit code %d", st.Info, code)
		}
	case <-time.After(within):
		t.Fatalf("Wait delivered nothing after %s exited", what)
	}
}
