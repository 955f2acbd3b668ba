package shim

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/berthhq/berth/internal/crilog"
)

// forwarded are the signals the shim passes on to the task's process: someone who
// signals the shim (an operator, an init system) means the task.
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// shim is one running shim.
type shim struct {
	spec  Spec
	child int // the process the shim started
	sigs  chan os.Signal
	rec   Record
	// childDone is set once the started process has been reaped.
	childDone bool
	// out copies the task's output into its log; nil for a raw log.
	out *output
}

// start makes the shim a child subreaper, subscribes to the signals and starts the task's
// process in a session of its own, holding fd 3 for it.
func start(spec Spec, hold *os.File) (*shim, error) {
	// Orphans of the task (a daemon's double fork) become the shim's children, so their
	// exits are the shim's to record.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("become a subreaper: %w", err)
	}
	s := &shim{spec: spec, sigs: make(chan os.Signal, 16)}
	// Subscribed before the start: a SIGCHLD of a task that ends at once is not lost.
	signal.Notify(s.sigs, append([]os.Signal{syscall.SIGCHLD}, forwarded...)...)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer devnull.Close()
	attr := &syscall.SysProcAttr{Setsid: true}
	if c := spec.Cred; c != nil {
		attr.Credential = &syscall.Credential{Uid: c.UID, Gid: c.GID, Groups: c.Groups}
	}
	stdout, stderr := os.Stdout, os.Stderr
	if spec.LogFormat == crilog.Format {
		log, err := spec.logWriter()
		if err != nil {
			return nil, err
		}
		if s.out, err = newOutput(log, spec.Cred); err != nil {
			return nil, err
		}
		stdout, stderr = s.out.taskOut, s.out.taskErr
	}
	p, err := os.StartProcess(spec.Args[0], spec.Args, &os.ProcAttr{
		Dir: spec.Dir, Env: spec.Env, Sys: attr,
		Files: []*os.File{devnull, stdout, stderr, hold},
	})
	if s.out != nil {
		s.out.started() // the task holds its ends now (or never will)
	}
	if err != nil {
		return nil, fmt.Errorf("start %s in %s: %w", spec.Args[0], spec.Dir, err)
	}
	s.child = p.Pid
	p.Release() // the shim reaps with wait4, not os.Process
	return s, nil
}

// supervise forwards signals and reaps children until the task's process has ended and
// its exit is recorded.
func (s *shim) supervise() int {
	for sig := range s.sigs {
		if sig != syscall.SIGCHLD {
			s.forward(sig.(syscall.Signal))
			continue
		}
		done, err := s.reap()
		if err != nil {
			fmt.Fprintf(s.errOut(), "berth shim: record the task's exit: %v\n", err)
			return 2
		}
		if done {
			return 0
		}
	}
	return 0
}

// reap collects every child that ended and records those that matter. It reports
// whether the task is over: its process ended, or the start command ended and no
// process of the task is left.
func (s *shim) reap() (bool, error) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if errors.Is(err, syscall.ECHILD) {
			if s.childDone {
				return true, s.finish()
			}
			return false, nil
		}
		if err != nil || pid <= 0 {
			return false, nil
		}
		e := exitOf(pid, ws)
		switch {
		case pid == s.child:
			s.childDone = true
			s.rec.Exits = append(s.rec.Exits, e)
			// Without a pid file the started process is the task; with one, a start
			// command that failed leaves nothing to wait for.
			if s.spec.PidFile == "" || e.Code != 0 {
				return true, s.finish()
			}
			if err := s.record(false); err != nil {
				return false, err
			}
		case s.spec.PidFile != "" && s.pidFileNames(pid):
			s.rec.Exits = append(s.rec.Exits, e)
			return true, s.finish()
		}
	}
}

// finish records the task's end once its output is in the log: the copy ends when the
// pipes reach their end, or after drainWait when a process left behind still holds them
// (it is not waited for, as the shim never waited for it before its output had pipes).
func (s *shim) finish() error {
	if s.out != nil {
		s.out.drain(drainWait)
	}
	return s.record(true)
}

// errOut is where the shim's own messages go: the log, as a record when it holds them.
func (s *shim) errOut() io.Writer {
	if s.out != nil {
		return s.out.log.Stream(crilog.Stderr)
	}
	return os.Stderr
}

// pidFileNames reports whether the pid file names pid now.
func (s *shim) pidFileNames(pid int) bool {
	b, err := os.ReadFile(s.spec.PidFile)
	if err != nil {
		return false
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return err == nil && n == pid
}

// forward sends sig to the task's process: the one the pid file names once the start
// command is done, else the started one. The pid file is the task's to write, and the
// shim runs as root: a pid it names is signalled only when it is the shim's child (an
// orphan of the task), never some other process of the machine.
func (s *shim) forward(sig syscall.Signal) {
	if !s.childDone {
		syscall.Kill(s.child, sig)
		return
	}
	if s.spec.PidFile == "" {
		return
	}
	b, err := os.ReadFile(s.spec.PidFile)
	if err != nil {
		return
	}
	target, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || target <= 1 || parentOf(target) != os.Getpid() {
		return
	}
	syscall.Kill(target, sig)
}

// parentOf returns the parent pid of pid from /proc (0 when unknown). The command name
// in /proc/PID/stat is in parentheses and may hold anything, so fields are counted from
// the last ')'.
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
