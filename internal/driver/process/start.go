package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/crilog"
	"github.com/berthhq/berth/internal/driver"
)

// defaultStartGrace is the default startGracePeriod, as BCS's process executor had it
// (docs/spec.md, Defaults).
const defaultStartGrace = time.Second

// Start prepares and starts a process task: packages, files, work dir, cgroup, then
// startCmd; it returns after startGracePeriod with the task's process checked (the pid
// file's pid, or the process berth started, named procName). A failed start leaves
// nothing behind: whatever it started is killed and its state removed; the returned
// State then says how the process ended when that is known.
func (d *Driver) Start(ctx context.Context, t *driver.Task) (driver.State, error) {
	if err := checkStartable(t); err != nil {
		return driver.State{}, err
	}
	d.locks.Lock(t.ID)
	defer d.locks.Unlock(t.ID)
	if _, err := os.Stat(d.statePath(t.ID)); err == nil {
		return driver.State{}, fmt.Errorf("task %s already exists", t.ID)
	}

	st, cred, err := d.newState(t)
	if err != nil {
		return driver.State{}, fmt.Errorf("task %s: %w", t.ID, err)
	}
	started := false
	defer func() {
		if !started {
			d.abort(st)
		}
	}()
	if err := d.startSteps(ctx, t, st, cred); err != nil {
		if !st.Exited {
			// Whatever runs is killed by abort; how it would have ended is unknown.
			st.markExited(-1, "", time.Now())
		}
		st.Message = err.Error()
		return st.public(), fmt.Errorf("task %s: %w", t.ID, err)
	}
	started = true
	return st.public(), nil
}

// newState is the record of a task about to start, with the credential it runs as: the
// spec's user, else its task group's dynamic uid (identity.go), else the default user.
// Stops, reloads and execs run as the user it started as.
func (d *Driver) newState(t *driver.Task) (*taskState, *credential, error) {
	p := t.Process
	name := t.Name
	if name == "" {
		name = p.ProcName
	}
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		name = t.ID // the log file is named after it: it must stay one file in LogDir
	}
	workDir := p.WorkPath
	if workDir == "" {
		workDir = t.WorkBaseDir
	}
	if workDir == "" {
		return nil, nil, errors.New("no workPath and no work base dir")
	}
	if v4.HasDotDot(workDir) || v4.HasDotDot(p.PidFile) {
		return nil, nil, errors.New("workPath and pidFile may not have '..' segments")
	}
	if !filepath.IsAbs(workDir) {
		if t.WorkBaseDir == "" {
			return nil, nil, fmt.Errorf("workPath %s is relative and there is no work base dir", workDir)
		}
		workDir = filepath.Join(t.WorkBaseDir, workDir)
	}
	logDir := t.LogDir
	if logDir == "" {
		logDir = filepath.Join(d.dataDir, "logs")
	}
	pidFile := p.PidFile
	if pidFile != "" && !filepath.IsAbs(pidFile) {
		pidFile = filepath.Join(workDir, pidFile)
	}
	grace := time.Duration(p.StartGracePeriod) * time.Second
	if grace <= 0 {
		grace = defaultStartGrace
	}
	labels := make(map[string]string, len(t.Labels)+1)
	for k, v := range t.Labels {
		labels[k] = v
	}
	d.owner.Stamp(labels)
	st := &taskState{
		ID: t.ID, Name: name, Labels: labels,
		StartCmd: p.StartCmd, ProcName: p.ProcName, PidFile: pidFile, User: p.User,
		WorkDir: workDir, LogPath: filepath.Join(logDir, name+".log"), LogFormat: crilog.Format,
		LogLimits: d.logLimits,
		PodDirs:   cleanDirs([]string{t.WorkBaseDir, t.RunBaseDir}),
		StopCmd:   p.StopCmd, ReloadCmd: p.ReloadCmd, RestartCmd: p.RestartCmd,
		StartGrace: grace, KillGrace: t.KillGrace,
	}
	if st.User == "" && d.ids == nil {
		st.User = d.defaultUser
	}
	if st.User == "" && d.ids != nil {
		st.Group = t.Labels[driver.LabelTaskGroup]
		if st.Group == "" {
			st.Group = t.ID
		}
		uid, err := d.ids.acquire(st.Group)
		if err != nil {
			return nil, nil, err
		}
		st.UID = uid
	}
	cred, err := d.credential(st)
	if err != nil {
		d.releaseIdentity(st)
		return nil, nil, err
	}
	st.Env = taskEnv(t.Env, cred)
	return st, cred, nil
}

// clearPidFile makes the pid file's directory for the task's user and removes a pid file
// left by an earlier run, which would name a dead, or worse a reused, pid.
func clearPidFile(sb sandbox, pidFile string, cred *credential) error {
	pl, err := sb.resolve("pidFile", pidFile)
	if err != nil {
		return err
	}
	dir, err := ensureDir(pl.dir(), cred)
	if err != nil {
		return fmt.Errorf("pidFile: %w", err)
	}
	defer dir.Close()
	if err := dir.Remove(filepath.Base(pl.rel)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("pidFile: %w", err)
	}
	return nil
}

// waitGrace waits startGracePeriod, returning early with an error when the process
// berth started fails first. With a pid file, the start command exiting 0 is how a
// daemon starts, so only a non-zero exit fails.
func (d *Driver) waitGrace(ctx context.Context, st *taskState, logOffset int64) error {
	timer := time.NewTimer(st.StartGrace)
	defer timer.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	childDone := false
	for {
		if !childDone {
			if e, ok := d.startExit(st); ok {
				childDone = true
				if st.PidFile == "" || e.Code != 0 {
					d.applyExit(st, e)
					return d.exitError(st, logOffset)
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("start interrupted: %w", ctx.Err())
		case <-timer.C:
			return nil
		case <-tick.C:
		}
	}
}

// exitError describes a start command that ended during the grace period, with the tail
// of what it wrote to the log.
func (d *Driver) exitError(st *taskState, logOffset int64) error {
	tail := logTail(st.LogPath, logOffset, 512)
	if tail != "" {
		tail = ": " + tail
	}
	if st.ExitCode == 127 {
		return fmt.Errorf("startCmd %q: command not found (exit 127)%s", st.StartCmd, tail)
	}
	if st.OOMKilled {
		return fmt.Errorf("startCmd %q was OOM-killed (memory limit) within startGracePeriod%s", st.StartCmd, tail)
	}
	return fmt.Errorf("startCmd %q exited with code %d within startGracePeriod%s", st.StartCmd, st.ExitCode, tail)
}

// abort undoes a failed start: kills what it started, removes its cgroup and state.
func (d *Driver) abort(st *taskState) {
	if st.ChildPid > 0 || st.Cgroup != "" {
		d.killAll(st, syscall.SIGKILL)
		d.waitGone(st, 5*time.Second)
	}
	if st.ShimPid > 0 && alive(st.ShimPid, st.ShimStartTicks) {
		// Its task is gone, so it exits by itself; one that does not is of no use.
		syscall.Kill(st.ShimPid, syscall.SIGKILL)
	}
	if cg := d.loadCgroup(st); cg != nil {
		if err := cg.Delete(); err != nil {
			d.log.Warn("removing cgroup of failed task", "task", st.ID, "err", err)
		}
	}
	if err := os.RemoveAll(d.taskDir(st.ID)); err != nil {
		d.log.Warn("removing state of failed task", "task", st.ID, "err", err)
	}
	d.releaseIdentity(st)
	if st.Pid > 0 && !st.Exited {
		st.markExited(-1, "", time.Now())
	}
}

// removeLeftoverCgroup deletes a cgroup of this ID that no state knows of (an agent
// crashed in the middle of a start): what runs in it is unaccounted for.
func (d *Driver) removeLeftoverCgroup(id string) {
	probe := &taskState{ID: id, Cgroup: d.cgroupPath(id), CgroupMode: string(d.cgroups)}
	cg := d.loadCgroup(probe)
	if cg == nil {
		return
	}
	if pids, _ := cg.Procs(); len(pids) > 0 {
		d.log.Warn("killing processes left in the cgroup of a new task", "task", id, "pids", pids)
		cg.Kill()
		d.waitGone(probe, 5*time.Second)
	}
	cg.Delete()
}

// openLog opens the task's log for appending and returns where this run starts in it.
func openLog(path string) (*os.File, int64, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o711); err != nil {
		return nil, 0, fmt.Errorf("log: %w", err)
	}
	// 0640: the log is the task's, not every user's (docs/process.md).
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return nil, 0, fmt.Errorf("log: %w", err)
	}
	off, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("log: %w", err)
	}
	return f, off, nil
}
