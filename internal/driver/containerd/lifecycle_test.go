package containerd

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/driver"
)

// A task that ends: its exit code through Wait and Inspect, both streams in its log.
func TestStartWaitExitAndLogs(t *testing.T) {
	d, _ := newDriver(t, nil)
	tk := task(t, "ends", "echo to-out; echo to-err >&2; exit 3")
	tk.RunToEnd = true
	start(t, d, tk)
	st := waitEnd(t, d, tk.ID)
	if st.Running || st.Info.ExitCode != 3 || st.Info.OOMKilled {
		t.Fatalf("ended as %+v, want exit code 3", st.Info)
	}
	if got := logs(t, d, tk.ID, driver.LogOptions{}); got != "to-out\nto-err\n" && got != "to-err\nto-out\n" {
		t.Fatalf("logs = %q", got)
	}
	if got := logs(t, d, tk.ID, driver.LogOptions{Stream: driver.StreamStderr}); got != "to-err\n" {
		t.Fatalf("stderr = %q", got)
	}
	if got := logs(t, d, tk.ID, driver.LogOptions{Tail: 1, Stream: driver.StreamStdout, Timestamps: true}); !strings.HasSuffix(got, " to-out\n") {
		t.Fatalf("stdout with times = %q", got)
	}
	if err := d.Remove(context.Background(), tk.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Inspect(context.Background(), tk.ID); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("inspect after remove: %v, want ErrNotFound", err)
	}
}

// A command that does not exist: Start fails with the runtime's reason, and the
// container stays, reporting it, until removed.
func TestStartMissingCommand(t *testing.T) {
	d, _ := newDriver(t, nil)
	tk := task(t, "missing", "")
	tk.Container.Command, tk.Container.Args = "/no/such/binary", nil
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := d.Start(ctx, tk)
	defer d.Remove(context.Background(), tk.ID)
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("start: %v, want the runtime's error", err)
	}
	if st.Running || st.Info.Status != "exited" || !strings.Contains(st.Info.Message, "no such file") {
		t.Fatalf("state %+v", st.Info)
	}
}
