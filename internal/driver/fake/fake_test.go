package fake

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/driver"
)

func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	d := New("process")
	d.FailNextStart("b", errors.New("boom"))
	start := func(name string) (driver.State, error) {
		return d.Start(ctx, &driver.Task{ID: "ns.g." + name, Name: name, Labels: map[string]string{driver.LabelTask: name}})
	}
	a, err := start("a")
	if err != nil || !a.Running || a.Info.Pid != 1001 || a.Info.Status != "running" {
		t.Fatalf("start a = %+v, %v", a, err)
	}
	if _, err := start("b"); err == nil || err.Error() != "boom" {
		t.Fatalf("FailNextStart: %v", err)
	}
	if _, err := start("b"); err != nil {
		t.Fatalf("second start of b: %v", err)
	}
	if _, err := start("a"); err == nil {
		t.Error("starting an existing ID succeeded")
	}
	if got := d.Started(); !slices.Equal(got, []string{"ns.g.a", "ns.g.b"}) {
		t.Errorf("Started = %v", got)
	}

	d.Exit("ns.g.a", 3)
	st, _ := d.Inspect(ctx, "ns.g.a")
	if st.Running || st.Info.ExitCode != 3 || st.Info.FinishAt.IsZero() {
		t.Errorf("after Exit = %+v", st)
	}
	d.OOM("ns.g.b")
	st, _ = d.Inspect(ctx, "ns.g.b")
	if st.Running || !st.Info.OOMKilled || st.Info.ExitCode != 137 {
		t.Errorf("after OOM = %+v", st)
	}
	if err := d.Stop(ctx, "ns.g.b", 4*time.Second); err != nil {
		t.Fatal(err)
	}
	if g, ok := d.Stopped("ns.g.b"); !ok || g != 4*time.Second {
		t.Errorf("Stopped = %v %v", g, ok)
	}
	if _, ok := d.Stopped("ns.g.a"); ok {
		t.Error("a was not stopped")
	}
	list, _ := d.List(ctx)
	if len(list) != 2 || list[0].Labels[driver.LabelTask] != "a" {
		t.Errorf("List = %+v", list)
	}
	if err := d.Remove(ctx, "ns.g.a"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Inspect(ctx, "ns.g.a"); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("Inspect after Remove: %v", err)
	}
}

func TestExecLogsActions(t *testing.T) {
	ctx := context.Background()
	d := New("docker")
	d.Add(driver.Task{ID: "t", Name: "t"})
	if res, err := d.Exec(ctx, "t", "true"); err != nil || res.ExitCode != 0 {
		t.Errorf("default Exec = %+v %v", res, err)
	}
	d.SetExec("t", func(_ context.Context, cmd string) (driver.ExecResult, error) {
		return driver.ExecResult{ExitCode: len(cmd)}, nil
	})
	if res, _ := d.Exec(ctx, "t", "abc"); res.ExitCode != 3 {
		t.Errorf("Exec = %+v", res)
	}
	if _, err := d.Exec(ctx, "nope", "x"); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("Exec of unknown: %v", err)
	}
	d.SetLogs("t", "1\n2\n3")
	rc, _ := d.Logs(ctx, "t", driver.LogOptions{Tail: 2})
	b, _ := io.ReadAll(rc)
	if string(b) != "2\n3" {
		t.Errorf("Logs tail 2 = %q", b)
	}
	_ = d.Action(ctx, "t", "reload")
	if got := d.Actions("t"); !slices.Equal(got, []string{"reload"}) {
		t.Errorf("Actions = %v", got)
	}
	if len(d.Started()) != 0 {
		t.Error("Add counted as a start")
	}
}
