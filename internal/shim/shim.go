// Package shim is the small parent of every process task: `berth shim`, the berth binary
// started again by the process driver, as containerd's runc shim and Nomad's executor
// are. The shim starts the task's process, forwards the signals it receives to it, stays
// its parent (and, as a child subreaper, the parent of what a daemonising startCmd leaves
// behind), and records how the task's process ended in a file next to the task's state,
// written atomically. The agent is not the task's parent, so an agent that restarted
// still learns the true exit code from that file, and a shim never depends on the agent:
// it needs nothing from it once the task runs.
//
// The protocol with the driver, on the shim's descriptors: 0 carries the Spec as JSON;
// 1 and 2 are the task's log: with Spec.LogFormat "cri" the task gets pipes and the shim
// copies them into the log as records (package crilog, output.go), rotating it when the
// spec sets limits (package logfile), else the log is
// handed to the task as its 1 and 2; 3 is the read end of the pipe on which
// the task's shell waits until the driver has put it into its cgroup, handed to the task
// as its descriptor 3; 4 is where the shim writes "ok PID" once the task's process is
// started, or "error MESSAGE".
package shim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/berthhq/berth/internal/atomicfile"
	"github.com/berthhq/berth/internal/crilog"
	"github.com/berthhq/berth/internal/logfile"
)

// Arg is the first argument that makes the berth binary (or a test binary that checks
// for it in TestMain, through RunIfCalled) run as a shim.
const Arg = "shim"

// maxSpec bounds the Spec the shim reads (the task's environment is the big part).
const maxSpec = 8 << 20

// keepExits is how many exits the record keeps: the start command's, the task process's,
// and those of processes a pid file named before the service restarted itself.
const keepExits = 8

// Spec is what the driver asks a shim to run.
type Spec struct {
	// Args is the task's command line; Args[0] is an absolute path.
	Args []string `json:"args"`
	Dir  string   `json:"dir"`
	Env  []string `json:"env"`
	// Cred, when set, is the user the task runs as.
	Cred *Cred `json:"cred,omitempty"`
	// PidFile is the task's pid file: the process it names is the task's process once
	// the start command has exited 0 (a daemon). Empty: the process started is the task.
	PidFile string `json:"pidFile,omitempty"`
	// ExitFile is where the exits are recorded (Record, JSON).
	ExitFile string `json:"exitFile"`
	// LogFormat is "cri" (crilog.Format) for a log of records, the task's stdout and
	// stderr kept apart; empty for the raw log of one file shared by both.
	LogFormat string `json:"logFormat,omitempty"`
	// LogPath is the log's file (the shim's descriptor 1) by name, and LogMaxBytes and
	// LogMaxFiles its limits (package logfile): with a "cri" log and both limits set, the
	// shim renames the log LogPath.1 (and so on) when it would pass LogMaxBytes, and
	// starts a new one, owned by Cred as the first was. Unset: the log is not rotated.
	LogPath     string `json:"logPath,omitempty"`
	LogMaxBytes int64  `json:"logMaxBytes,omitempty"`
	LogMaxFiles int    `json:"logMaxFiles,omitempty"`
}

// logLimits returns the log's limits; the zero Limits when it is not rotated.
func (s Spec) logLimits() logfile.Limits {
	l := logfile.Limits{MaxBytes: s.LogMaxBytes, MaxFiles: s.LogMaxFiles}
	if s.LogFormat != crilog.Format || s.LogPath == "" || !l.Rotates() {
		return logfile.Limits{}
	}
	return l
}

// Cred is a user and its groups.
type Cred struct {
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
}

// Exit is how one process ended.
type Exit struct {
	Pid int `json:"pid"`
	// Code is the exit status, or 128+signal for a process killed by a signal (as a
	// shell reports it).
	Code int `json:"code"`
	// Signal is the signal that killed the process (0 when it exited).
	Signal int       `json:"signal,omitempty"`
	At     time.Time `json:"at"`
}

// Record is the content of the exit file.
type Record struct {
	// Exits are the recorded exits, oldest first.
	Exits []Exit `json:"exits"`
	// Done is set in the last write, just before the shim exits: the task has ended.
	Done bool `json:"done,omitempty"`
}

// ReadRecord reads an exit file; a missing file is an empty record.
func ReadRecord(path string) (Record, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Record{}, nil
	}
	if err != nil {
		return Record{}, fmt.Errorf("read exit record: %w", err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("decode exit record %s: %w", path, err)
	}
	return r, nil
}

// Find returns the last recorded exit of pid.
func (r Record) Find(pid int) (Exit, bool) {
	for i := len(r.Exits) - 1; i >= 0; i-- {
		if r.Exits[i].Pid == pid {
			return r.Exits[i], true
		}
	}
	return Exit{}, false
}

// RunIfCalled runs the shim and exits when the process was started as one (os.Args[1]
// is Arg); otherwise it returns. The berth binary and the tests that start process tasks
// call it first thing.
func RunIfCalled() {
	if len(os.Args) > 1 && os.Args[1] == Arg {
		os.Exit(Main())
	}
}

// Main runs a shim on the descriptors described in the package comment and returns its
// exit status: 0 once the task's end is recorded, 1 when it could not start the task, 2
// when it could not record the end.
func Main() int {
	status := os.NewFile(4, "status")
	hold := os.NewFile(3, "hold")
	if status == nil || hold == nil {
		fmt.Fprintln(os.Stderr, "berth shim: started without its descriptors (it is run by the berth agent, not by hand)")
		return 1
	}
	spec, err := readSpec(os.Stdin)
	if err != nil {
		fmt.Fprintf(status, "error %v\n", err)
		return 1
	}
	s, err := start(spec, hold)
	hold.Close()
	if err != nil {
		fmt.Fprintf(status, "error %v\n", err)
		return 1
	}
	fmt.Fprintf(status, "ok %d\n", s.child)
	status.Close()
	// What the berth binary's package initialisers allocated is garbage to a shim: give
	// it back, since a shim lives as long as its task.
	debug.FreeOSMemory()
	return s.supervise()
}

func readSpec(r io.Reader) (Spec, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxSpec+1))
	if err != nil {
		return Spec{}, fmt.Errorf("read spec: %w", err)
	}
	if len(b) > maxSpec {
		return Spec{}, fmt.Errorf("spec larger than %d bytes", maxSpec)
	}
	var spec Spec
	if err := json.Unmarshal(b, &spec); err != nil {
		return Spec{}, fmt.Errorf("decode spec: %w", err)
	}
	if len(spec.Args) == 0 || spec.ExitFile == "" {
		return Spec{}, errors.New("spec has no args or no exit file")
	}
	if spec.LogFormat != "" && spec.LogFormat != crilog.Format {
		return Spec{}, fmt.Errorf("spec has logFormat %q (want %q or none)", spec.LogFormat, crilog.Format)
	}
	if l := spec.logLimits(); l.Rotates() {
		if err := l.Check(); err != nil {
			return Spec{}, fmt.Errorf("spec's log limits: %w", err)
		}
	}
	return spec, nil
}

// record writes the exits atomically, so the agent reads the old record or the new one.
func (s *shim) record(done bool) error {
	if len(s.rec.Exits) > keepExits {
		s.rec.Exits = s.rec.Exits[len(s.rec.Exits)-keepExits:]
	}
	s.rec.Done = done
	b, err := json.Marshal(s.rec)
	if err != nil {
		return err
	}
	return atomicfile.Write(s.spec.ExitFile, b, 0o600)
}

// exitOf turns a wait status into an Exit.
func exitOf(pid int, ws syscall.WaitStatus) Exit {
	e := Exit{Pid: pid, Code: -1, At: time.Now()}
	switch {
	case ws.Exited():
		e.Code = ws.ExitStatus()
	case ws.Signaled():
		e.Signal = int(ws.Signal())
		e.Code = 128 + e.Signal
	}
	return e
}
