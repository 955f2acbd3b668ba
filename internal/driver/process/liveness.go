package process

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// procStat is what the driver reads of a process from /proc/<pid>/stat.
type procStat struct {
	Comm       string
	State      byte // R, S, D, Z, T, ...
	Ppid       int
	Pgid       int
	StartTicks uint64 // field 22: start time after boot, in clock ticks
}

// errNoProcess says /proc/<pid> does not exist.
var errNoProcess = errors.New("no such process")

// readStat parses /proc/<pid>/stat. The comm field is in parentheses and may itself hold
// spaces and parentheses, so the fields after it are found from the last ')'.
func readStat(pid int) (procStat, error) {
	if pid <= 0 {
		return procStat{}, errNoProcess
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrInvalid) {
		return procStat{}, errNoProcess
	}
	if err != nil {
		return procStat{}, err
	}
	s := string(b)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return procStat{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	rest := strings.Fields(s[closing+1:])
	// rest[0] is field 3 (state); field n is rest[n-3].
	if len(rest) < 20 || len(rest[0]) != 1 {
		return procStat{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	ps := procStat{Comm: s[open+1 : closing], State: rest[0][0]}
	ps.Ppid, _ = strconv.Atoi(rest[1])
	ps.Pgid, _ = strconv.Atoi(rest[2])
	ps.StartTicks, err = strconv.ParseUint(rest[19], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("malformed /proc/%d/stat: %w", pid, err)
	}
	return ps, nil
}

// alive reports whether pid is a live (not zombie) process started at startTicks
// (0: any start time).
func alive(pid int, startTicks uint64) bool {
	ps, err := readStat(pid)
	if err != nil || ps.State == 'Z' || ps.State == 'X' {
		return false
	}
	return startTicks == 0 || ps.StartTicks == startTicks
}

// isOwnChild reports whether pid is a child of this very process, started at startTicks.
func isOwnChild(pid int, startTicks uint64) bool {
	ps, err := readStat(pid)
	return err == nil && ps.Ppid == os.Getpid() && ps.StartTicks == startTicks
}

// procNameOf returns a process's name as the kernel knows it: /proc/<pid>/comm (at most
// 15 characters) and the basename of /proc/<pid>/exe (empty when unreadable).
func procNameOf(pid int) (comm, exe string) {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil {
		comm = strings.TrimSuffix(string(b), "\n")
	}
	if l, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil {
		exe = filepath.Base(strings.TrimSuffix(l, " (deleted)"))
	}
	return comm, exe
}

// nameMatches checks a process against procName like BCS (basename of the executable)
// and also accepts the kernel's comm, which is truncated to 15 characters and is what a
// script interpreter's process is called. An empty procName matches anything. It
// returns the process's name for error messages.
func nameMatches(pid int, procName string) (bool, string) {
	comm, exe := procNameOf(pid)
	name := exe
	if name == "" {
		name = comm
	}
	if procName == "" {
		return true, name
	}
	if exe == procName {
		return true, name
	}
	want := procName
	if len(want) > 15 {
		want = want[:15]
	}
	return comm == want, comm
}

// checkProcess says why pid is not the task's process, or nil when it is.
func checkProcess(pid int, procName string) error {
	ps, err := readStat(pid)
	if err != nil {
		return fmt.Errorf("process %d does not exist", pid)
	}
	if ps.State == 'Z' || ps.State == 'X' {
		return fmt.Errorf("process %d has exited", pid)
	}
	if ok, name := nameMatches(pid, procName); !ok {
		return fmt.Errorf("process %d is %q, not %q: %s", pid, name, procName, nameHint(name, procName))
	}
	return nil
}

// refresh brings a running task's record up to date with /proc: it reaps the driver's
// own child, follows a pid file that names a new process (the service restarted itself)
// and marks the task exited when its process is gone. It reports whether st changed.
// The caller holds the task's lock.
func (d *Driver) refresh(st *taskState) bool {
	if st.Exited {
		return false
	}
	if d.takeChildExit(st) {
		return true
	}
	if alive(st.Pid, st.PidStartTicks) {
		if ok, _ := nameMatches(st.Pid, st.ProcName); ok {
			return false
		}
	}
	// It may have exited since takeChildExit looked: now it is a zombie to reap.
	if d.takeChildExit(st) {
		return true
	}
	if st.PidFile != "" {
		if pid, err := d.sandboxOf(st).readPidFile(st.PidFile); err == nil && pid != st.Pid && checkProcess(pid, st.ProcName) == nil && d.ownsPid(st, pid) {
			ps, _ := readStat(pid)
			d.log.Info("task process changed", "task", st.ID, "old", st.Pid, "new", pid)
			st.Pid, st.PidStartTicks = pid, ps.StartTicks
			return true
		}
	}
	// The shim may be about to record it: it reaps the process and writes at once.
	if e, ok := d.awaitRecordedExit(st, st.Pid); ok {
		d.applyExit(st, e)
		return true
	}
	msg := fmt.Sprintf("process %d is gone", st.Pid)
	if st.Stopping {
		msg = "stopped"
	}
	st.markExited(-1, msg, time.Now())
	st.OOMKilled = d.oomKilled(st, false)
	return true
}

// takeChildExit records the exit of the task's process when its shim has recorded it,
// or, for a task started without a shim, when it is the driver's child and has ended
// (reaping it if the reaper has not yet).
func (d *Driver) takeChildExit(st *taskState) bool {
	if st.ShimPid > 0 {
		e, ok := d.recordedExit(st, st.Pid)
		return ok && d.applyExit(st, e)
	}
	if st.Pid != st.ChildPid || !d.reaper.owns(st.ChildPid) {
		return false
	}
	e, ok := d.reaper.status(st.ChildPid)
	if !ok {
		return false
	}
	changed := d.applyChildExit(st, st.ChildPid, e)
	d.reaper.forget(st.ChildPid)
	return changed
}

// ownsPid reports whether pid is one of the task's processes: in its cgroup, or, for a
// task without one, below its shim (a subreaper, so daemons that detach stay below it)
// or the process berth started.
func (d *Driver) ownsPid(st *taskState, pid int) bool {
	if cg := d.loadCgroup(st); cg != nil {
		pids, err := cg.Procs()
		return err == nil && slices.Contains(pids, pid)
	}
	for _, anc := range []struct {
		pid   int
		ticks uint64
	}{{st.ShimPid, st.ShimStartTicks}, {st.ChildPid, st.ChildStartTicks}} {
		if anc.pid > 0 && alive(anc.pid, anc.ticks) && descendantOf(pid, anc.pid) {
			return true
		}
	}
	return false
}

// descendantOf reports whether pid is ancestor or below it.
func descendantOf(pid, ancestor int) bool {
	for range 4096 { // a chain of parents ends at 1 long before
		if pid == ancestor {
			return true
		}
		if pid <= 1 {
			return false
		}
		ps, err := readStat(pid)
		if err != nil {
			return false
		}
		pid = ps.Ppid
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
