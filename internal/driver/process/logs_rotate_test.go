package process

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/logfile"
)

// rotateLimits make a log of lines of some 140 bytes rotate every 460 lines or so.
var rotateLimits = logfile.Limits{MaxBytes: logfile.MinMaxBytes, MaxFiles: 3}

// linesCmd writes lines "NNNNN xxx..." numbered from 0 to n-1, one write each, and every
// tenth number "eNNNNN" to stderr too.
func linesCmd(n int) string {
	return fmt.Sprintf(`i=0; while [ $i -lt %d ]; do printf '%%05d %s\n' $i; `+
		`[ $((i %% 10)) -eq 0 ] && printf 'e%%05d\n' $i >&2; i=$((i+1)); done`, n, strings.Repeat("x", 100))
}

// checkRun checks that text is the numbered lines first..last ("NNNNN ..." or "eNNNNN",
// every step-th), each once, in order.
func checkRun(t *testing.T, text string, prefix string, step, first, last int) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if want := (last-first)/step + 1; len(lines) != want {
		t.Fatalf("%d lines, want %d (%d to %d): first %.20q, last %.20q", len(lines), want, first, last, lines[0], lines[len(lines)-1])
	}
	for i, line := range lines {
		num, _, _ := strings.Cut(strings.TrimPrefix(line, prefix), " ")
		if n, err := strconv.Atoi(num); err != nil || n != first+i*step {
			t.Fatalf("line %d is %.20q, want number %d", i, line, first+i*step)
		}
	}
}

// firstNumber is the number of text's first line.
func firstNumber(t *testing.T, text string) int {
	t.Helper()
	num, _, _ := strings.Cut(text, " ")
	n, err := strconv.Atoi(num)
	if err != nil {
		t.Fatalf("first line %.20q", text)
	}
	return n
}

// A chatty task's log is kept to MaxFiles files of MaxBytes; Logs reads them all, oldest
// first, and a tail longer than the live file takes lines from the rotated ones. An
// agent restarted with other limits reads the task's files by the task's own.
func TestLogsAcrossRotation(t *testing.T) {
	requireCgroups(t)
	t.Parallel()
	d := newTestDriverWith(t, Config{LogLimits: rotateLimits})
	const n = 2000
	task := testTask(t, "ns.logs.rotate", &v4.ProcessTask{ProcName: "sleep", StartGracePeriod: 1,
		StartCmd: linesCmd(n) + "; exec sleep 60"})
	mustStart(t, d, task)
	all := awaitLogs(t, d, task.ID, driver.LogOptions{Stream: "stdout"}, fmt.Sprintf("%05d ", n-1))

	st, _ := d.load(task.ID)
	if st.LogLimits != rotateLimits {
		t.Fatalf("state's limits %+v, want %+v", st.LogLimits, rotateLimits)
	}
	for i, name := range []string{st.LogPath, logfile.Rotated(st.LogPath, 1), logfile.Rotated(st.LogPath, 2)} {
		fi, err := os.Stat(name)
		if err != nil || fi.Size() > rotateLimits.MaxBytes || fi.Mode().Perm() != 0o640 {
			t.Fatalf("file %d: %v %v", i, fi, err)
		}
	}
	if _, err := os.Stat(logfile.Rotated(st.LogPath, 3)); !os.IsNotExist(err) {
		t.Fatalf("a fourth file: %v", err)
	}

	// Everything kept: the newest lines, in order, the oldest dropped.
	first := firstNumber(t, all)
	if first == 0 || first > n-2*460 {
		t.Fatalf("the files hold lines from %d: want the oldest dropped, over two files kept", first)
	}
	checkRun(t, all, "", 1, first, n-1)
	// A tail of more lines than the live file holds.
	checkRun(t, logsOf(t, d, task.ID, driver.LogOptions{Stream: "stdout", Tail: 700}), "", 1, n-700, n-1)
	// One line in ten on stderr: 60 of them span the three files.
	checkRun(t, logsOf(t, d, task.ID, driver.LogOptions{Stream: "stderr", Tail: 60}), "e", 10, n-600, n-10)
	// More lines than there are: all of them.
	checkRun(t, logsOf(t, d, task.ID, driver.LogOptions{Stream: "stdout", Tail: 5 * n}), "", 1, first, n-1)

	// An agent restarted with other limits: the task keeps its shim's.
	other := newTestDriverWith(t, Config{DataDir: d.dataDir, LogLimits: logfile.Limits{MaxBytes: 1 << 20, MaxFiles: 2}})
	if got := logsOf(t, other, task.ID, driver.LogOptions{Stream: "stdout"}); got != all {
		t.Fatalf("the restarted agent reads %d bytes, want %d", len(got), len(all))
	}
}

// A follower started before the task writes keeps up across the rotations: every line
// once, in order.
func TestLogsFollowAcrossRotation(t *testing.T) {
	requireCgroups(t)
	t.Parallel()
	d := newTestDriverWith(t, Config{LogLimits: logfile.Limits{MaxBytes: logfile.MinMaxBytes, MaxFiles: 5}})
	const n = 1200 // some two and a half files
	task := testTask(t, "ns.logs.follow", &v4.ProcessTask{ProcName: "sh", StartGracePeriod: 1})
	goFile := filepath.Join(task.RunBaseDir, "go")
	task.Process.StartCmd = fmt.Sprintf("while [ ! -e %s ]; do sleep 0.05; done; %s; exec sleep 60", goFile, linesCmd(n))
	mustStart(t, d, task)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := d.Logs(ctx, task.ID, driver.LogOptions{Stream: "stdout", Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if err := os.WriteFile(goFile, nil, 0o644); err != nil { // the task writes now
		t.Fatal(err)
	}
	var b strings.Builder
	sc := bufio.NewScanner(rc)
	last := fmt.Sprintf("%05d ", n-1)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), last) {
			break
		}
	}
	st, _ := d.load(task.ID)
	if _, err := os.Stat(logfile.Rotated(st.LogPath, 2)); err != nil {
		t.Fatalf("the log was not rotated twice: %v", err)
	}
	checkRun(t, b.String(), "", 1, 0, n-1)
}

// The files a rotation starts belong to the task's user, as the first one: a process
// that opens its output again is checked against the file.
func TestLogsRotatedFilesOfAUser(t *testing.T) {
	requireCgroups(t)
	t.Parallel()
	u := testUser(t)
	d := newTestDriverWith(t, Config{LogLimits: rotateLimits})
	task := testTask(t, "ns.logs.rotuser", &v4.ProcessTask{ProcName: "sleep", User: u.Name, StartGracePeriod: 1,
		StartCmd: linesCmd(1000) + "; exec sleep 60"})
	for dir := task.WorkBaseDir; dir != "/" && dir != os.TempDir(); dir = filepath.Dir(dir) {
		os.Chmod(dir, 0o755)
	}
	mustStart(t, d, task)
	awaitLogs(t, d, task.ID, driver.LogOptions{Stream: "stdout", Tail: 1}, "00999 ")
	st, _ := d.load(task.ID)
	for _, name := range []string{st.LogPath, logfile.Rotated(st.LogPath, 1)} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		sys := fi.Sys().(*syscall.Stat_t)
		if sys.Uid != u.UID || sys.Gid != u.GID || fi.Mode().Perm() != 0o640 {
			t.Errorf("%s: %d:%d %v, want %d:%d 0640", name, sys.Uid, sys.Gid, fi.Mode().Perm(), u.UID, u.GID)
		}
	}
}
