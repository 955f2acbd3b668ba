package process

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/crilog"
	"github.com/berthhq/berth/internal/driver"
)

// logsOf reads a task's logs with opts (no follow).
func logsOf(t *testing.T, d *Driver, id string, opts driver.LogOptions) string {
	t.Helper()
	rc, err := d.Logs(context.Background(), id, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// awaitLogs polls the task's logs until they hold want (the task writes them
// asynchronously), and returns them.
func awaitLogs(t *testing.T, d *Driver, id string, opts driver.LogOptions, want string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := logsOf(t, d, id, opts)
		if strings.Contains(got, want) || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A task's stdout and stderr are kept apart in its log, as records, and read back alone
// or together in the order written, with or without their times. The order of two pipes
// is the order the shim reads them in: writes a moment apart (sleep) keep theirs.
func TestLogsKeepStreamsApart(t *testing.T) {
	d := parallelTestDriver(t)
	task := testTask(t, "ns.logs.streams", &v4.ProcessTask{
		ProcName: "sleep", StartGracePeriod: 1,
		StartCmd: `echo out1; sleep 0.1; echo err1 >&2; sleep 0.1; printf out; printf '2\n'; exec sleep 60`,
		StopCmd:  `echo stopping; sleep 0.1; echo stop-err >&2`,
	})
	mustStart(t, d, task)
	both := awaitLogs(t, d, task.ID, driver.LogOptions{}, "out2\n")
	if both != "out1\nerr1\nout2\n" {
		t.Fatalf("both streams: %q", both)
	}
	if got := logsOf(t, d, task.ID, driver.LogOptions{Stream: "stderr"}); got != "err1\n" {
		t.Errorf("stderr: %q", got)
	}
	if got := logsOf(t, d, task.ID, driver.LogOptions{Stream: "stdout"}); got != "out1\nout2\n" {
		t.Errorf("stdout: %q", got)
	}
	if got := logsOf(t, d, task.ID, driver.LogOptions{Stream: "stdout", Tail: 1}); got != "out2\n" {
		t.Errorf("stdout tail 1: %q", got)
	}
	stamped := logsOf(t, d, task.ID, driver.LogOptions{Stream: "stderr", Timestamps: true})
	at, text, _ := strings.Cut(stamped, " ")
	if _, err := time.Parse(time.RFC3339Nano, at); err != nil || text != "err1\n" {
		t.Errorf("stderr with timestamps: %q (%v)", stamped, err)
	}

	// stopCmd's output is framed too.
	if err := d.Stop(context.Background(), task.ID, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := logsOf(t, d, task.ID, driver.LogOptions{Stream: "stderr"}); got != "err1\nstop-err\n" {
		t.Errorf("stderr after stop: %q", got)
	}
	st, _ := d.load(task.ID)
	sc := bufio.NewScanner(strings.NewReader(readFile(t, st.LogPath)))
	for sc.Scan() {
		if rec := crilog.Parse(sc.Bytes()); rec.Time == "" {
			t.Errorf("log line %q is not a record", sc.Text())
		}
	}

	// A task an older agent started has a raw log: all of it is stdout.
	st.LogFormat = ""
	if err := d.save(st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(st.LogPath, []byte("raw1\nraw2\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if got := logsOf(t, d, task.ID, driver.LogOptions{Stream: "stderr"}); got != "" {
		t.Errorf("stderr of a raw log: %q", got)
	}
	if got := logsOf(t, d, task.ID, driver.LogOptions{Stream: "stdout", Tail: 1}); got != "raw2\n" {
		t.Errorf("stdout tail 1 of a raw log: %q", got)
	}
}

// A daemon's output reaches the log after its start command has exited: the shim copies
// the pipes while the daemon holds them.
func TestLogsOfADaemonAfterItsStartCommand(t *testing.T) {
	d := parallelTestDriver(t)
	task := testTask(t, "ns.logs.daemon", &v4.ProcessTask{ProcName: "sleep", StartGracePeriod: 1})
	writeScript(t, filepath.Join(task.WorkBaseDir, "start.sh"), `echo starting
( sleep 0.3; echo daemon-out; echo daemon-err >&2; exec sleep 60 ) &
echo $! > "$1"
`)
	task.Process.PidFile = filepath.Join(task.RunBaseDir, "app.pid")
	task.Process.StartCmd = "./start.sh " + task.Process.PidFile
	mustStart(t, d, task)
	defer d.Stop(context.Background(), task.ID, time.Second)
	if got := awaitLogs(t, d, task.ID, driver.LogOptions{Stream: "stderr"}, "daemon-err"); got != "daemon-err\n" {
		t.Fatalf("stderr: %q", got)
	}
	if got := logsOf(t, d, task.ID, driver.LogOptions{Stream: "stdout"}); got != "starting\ndaemon-out\n" {
		t.Fatalf("stdout: %q", got)
	}
}

// A task of another user may open its output again (/dev/stdout): its pipes are its own.
func TestLogsReopenedOutputOfAUser(t *testing.T) {
	d := parallelTestDriver(t)
	u := testUser(t)
	task := testTask(t, "ns.logs.user", &v4.ProcessTask{ProcName: "sleep", User: u.Name, StartGracePeriod: 1,
		StartCmd: `echo again > /dev/stdout && sleep 0.1 && echo err-again > /dev/stderr; exec sleep 60`})
	for dir := task.WorkBaseDir; dir != "/" && dir != os.TempDir(); dir = filepath.Dir(dir) {
		os.Chmod(dir, 0o755)
	}
	mustStart(t, d, task)
	defer d.Stop(context.Background(), task.ID, time.Second)
	if got := awaitLogs(t, d, task.ID, driver.LogOptions{}, "err-again"); got != "again\nerr-again\n" {
		t.Fatalf("logs: %q", got)
	}
}

// A start command that fails names its output as text in the error, not as records.
func TestStartFailureQuotesOutputAsText(t *testing.T) {
	d := parallelTestDriver(t)
	task := testTask(t, "ns.logs.fail", &v4.ProcessTask{ProcName: "sh", StartGracePeriod: 1,
		StartCmd: `echo first; sleep 0.1; echo broken >&2; exit 3`})
	_, err := d.Start(context.Background(), task)
	if err == nil || !strings.Contains(err.Error(), "first | broken") || strings.Contains(err.Error(), "stderr") {
		t.Fatalf("Start error %v: want the output as text", err)
	}
}
