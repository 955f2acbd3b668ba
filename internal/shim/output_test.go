package shim

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/crilog"
)

// newTestOutput is an output into a new log file, closed at the test's end.
func newTestOutput(t *testing.T) (*os.File, *output) {
	t.Helper()
	log, err := os.Create(filepath.Join(t.TempDir(), "task.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	o, err := newOutput(log, nil)
	if err != nil {
		t.Fatal(err)
	}
	return log, o
}

// The task's two pipes land in the log as records of their streams, and the copy ends
// once the last holder of the write ends has closed them.
func TestOutputCopiesBothPipesAsRecords(t *testing.T) {
	log, o := newTestOutput(t)
	o.taskOut.WriteString("out1\n")
	o.taskErr.WriteString("err1\npart")
	o.started() // the task (here the test) is the last holder: it closes them
	select {
	case <-o.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the copy did not end with the pipes")
	}
	b, err := os.ReadFile(log.Name())
	if err != nil {
		t.Fatal(err)
	}
	if got := string(crilog.Text(b)); !strings.Contains(got, "out1\n") || !strings.Contains(got, "err1\n") || !strings.HasSuffix(got, "part") {
		t.Fatalf("log text %q of\n%s", got, b)
	}
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if crilog.Parse([]byte(line)).Time == "" {
			t.Errorf("%q is not a record", line)
		}
	}
}

// A process left behind that holds the pipes does not hold the task's end: drain gives
// up after its bound.
func TestOutputDrainIsBounded(t *testing.T) {
	_, o := newTestOutput(t)
	held, err := syscall.Dup(int(o.taskOut.Fd())) // a daemon's copy of stdout
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(held)
	o.started()
	o.drain(10 * time.Millisecond)
	select {
	case <-o.done:
		t.Fatal("the copy ended while a process holds stdout")
	default:
	}
}
