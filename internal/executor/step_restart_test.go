package executor

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/drivertest"
	"github.com/berthhq/berth/internal/driver/process"
)

// TestProcessStepAfterRestart: the agent goes away while a process step runs, its main
// task exits meanwhile (the shim records the exit), and the next agent collects the
// outputs when it adopts the pod.
func TestProcessStepAfterRestart(t *testing.T) {
	if os.Geteuid() != 0 || testing.Short() {
		t.Skip("needs root and real processes")
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := t.TempDir()
	newDriver := func() *process.Driver {
		d, err := process.New(process.Config{DataDir: filepath.Join(dir, "driver"), Logger: quiet, CgroupParent: "berth-executor-test"})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	newExec := func(d *process.Driver, rec *recorder) *Executor {
		t.Helper()
		return New(Config{NodeName: testNode, HostIP: "127.0.0.1", DataDir: dir, Drivers: map[string]driver.Driver{"process": d},
			Logger: quiet, Report: rec.report, PollInterval: 50 * time.Millisecond})
	}
	// A previous agent started the step's main task (as the executor does), then went.
	d1 := newDriver()
	tg := stepTG("rs", `while [ ! -s go ]; do sleep 0.05; done; cat go > out; echo done`, &v4.StepIO{
		Parameters: []v4.StepParameter{{Name: "p", Path: "/out"}}, Result: true})
	pod := filepath.Join(dir, "pods", testNS+".rs")
	work := filepath.Join(pod, "work")
	for _, d := range []string{work, filepath.Join(pod, "logs")} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	proc := tg.Spec.Template.Spec.Processes[0]
	if _, err := d1.Start(context.Background(), &driver.Task{ID: id("rs", "main"), Name: "main", Process: &proc, RunToEnd: true,
		Labels: taskLabels(tg, testNode, "main"), WorkBaseDir: work, LogDir: filepath.Join(pod, "logs"), KillGrace: time.Second}); err != nil {
		t.Fatal(err)
	}
	d1.Close()

	// The task exits while no agent runs.
	if err := os.WriteFile(filepath.Join(work, "go"), []byte("after-restart\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Nobody looks while it ends (the shim records the exit).
	time.Sleep(500 * time.Millisecond)
	d2, rec2 := newDriver(), &recorder{reports: map[string][]v4.TaskGroupStatus{}}
	t.Cleanup(func() { d2.Close() })
	drivertest.WaitEnded(t, d2, id("rs", "main"), waitDeadline)
	e2 := newExec(d2, rec2)
	t.Cleanup(e2.Close)
	states, err := d2.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !e2.Adopt(context.Background(), tg, states) {
		t.Fatal("Adopt = false")
	}
	st := rec2.waitPhase(t, "rs", v4.StatusFinish)
	if st.Step == nil || st.Step.Error != "" || len(st.Step.Parameters) != 1 || *st.Step.Parameters[0].Value != "after-restart\n" ||
		st.Step.Result == nil || *st.Step.Result != "done\n" {
		t.Fatalf("step %+v", st.Step)
	}
	if err := e2.Remove(context.Background(), testNS, "rs"); err != nil {
		t.Error(err)
	}
}
