package process

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/berthhq/berth/internal/driver"
)

// execOutputMax caps the output Exec returns.
const execOutputMax = 64 << 10

// Exec runs /bin/sh -c cmd in the task's context: its work dir, user and environment,
// inside its cgroup (like docker exec), bounded by ctx. The output (stdout and stderr
// together) is cut at 64 KiB. A command killed by ctx returns an error.
func (d *Driver) Exec(ctx context.Context, id string, cmd string) (driver.ExecResult, error) {
	st, err := d.snapshot(id)
	if err != nil {
		return driver.ExecResult{}, err
	}
	cred, err := d.credential(st)
	if err != nil {
		return driver.ExecResult{}, fmt.Errorf("task %s: %w", id, err)
	}
	out := &cappedBuffer{max: execOutputMax}
	code, err := runShell(ctx, shellSpec{Cmd: cmd, Dir: st.WorkDir, Cred: cred, Env: st.Env, Out: out, Cgroup: d.loadCgroup(st)})
	res := driver.ExecResult{ExitCode: code, Output: out.buf}
	if err != nil {
		return res, fmt.Errorf("task %s: exec: %w", id, err)
	}
	return res, nil
}

// Action runs a process's "reload" (reloadCmd) or "restart" (restartCmd) in its
// context, output to its log, bounded by ctx. After a restart the pid file is read again
// (the service's pid may change) within startGracePeriod; without a pid file, a process
// named procName in the task's cgroup takes over when berth's own process is gone.
func (d *Driver) Action(ctx context.Context, id string, action string) error {
	d.locks.Lock(id)
	defer d.locks.Unlock(id)
	st, err := d.load(id)
	if err != nil {
		return err
	}
	var cmd string
	switch action {
	case "reload":
		cmd = st.ReloadCmd
	case "restart":
		cmd = st.RestartCmd
	default:
		return fmt.Errorf("task %s: unknown action %q (reload or restart)", id, action)
	}
	if cmd == "" {
		return fmt.Errorf("task %s: process has no %sCmd", id, action)
	}
	if d.refresh(st) {
		if err := d.save(st); err != nil {
			return err
		}
	}
	if st.Exited {
		return fmt.Errorf("task %s has exited: cannot %s it", id, action)
	}
	cred, err := d.credential(st)
	if err != nil {
		return fmt.Errorf("task %s: %w", id, err)
	}
	logf, _, err := openLog(st.LogPath)
	if err != nil {
		return fmt.Errorf("task %s: %w", id, err)
	}
	oldPid := st.Pid
	out, errOut := st.logWriters(logf)
	code, err := runShell(ctx, shellSpec{Cmd: cmd, Dir: st.WorkDir, Cred: cred, Env: st.Env, Out: out, Err: errOut, Cgroup: d.loadCgroup(st)})
	logf.Close()
	if err != nil {
		return fmt.Errorf("task %s: %sCmd: %w", id, action, err)
	}
	if code != 0 {
		return fmt.Errorf("task %s: %sCmd %q exited with code %d", id, action, cmd, code)
	}
	if action == "restart" {
		if err := d.followRestart(ctx, st, oldPid); err != nil {
			return fmt.Errorf("task %s: after restartCmd: %w", id, err)
		}
	}
	d.log.Info("task action done", "task", id, "action", action, "pid", st.Pid)
	return nil
}

// followRestart finds the task's process after restartCmd, polling up to
// startGracePeriod, and records it. The caller holds the task's lock.
func (d *Driver) followRestart(ctx context.Context, st *taskState, oldPid int) error {
	deadline := time.Now().Add(st.StartGrace)
	var lastErr error
	for {
		pid, err := d.findRestarted(st, oldPid)
		if err == nil {
			if pid != st.Pid {
				ps, _ := readStat(pid)
				st.Pid, st.PidStartTicks = pid, ps.StartTicks
			}
			return d.save(st)
		}
		lastErr = err
		if time.Now().After(deadline) {
			return lastErr
		}
		select {
		case <-ctx.Done():
			return errors.Join(lastErr, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// findRestarted returns the pid that is the task after a restart.
func (d *Driver) findRestarted(st *taskState, oldPid int) (int, error) {
	if st.PidFile != "" {
		pid, err := d.sandboxOf(st).readPidFile(st.PidFile)
		if err != nil {
			return 0, err
		}
		if pid == oldPid && !alive(pid, st.PidStartTicks) {
			return 0, fmt.Errorf("pid file %s still names the old process %d", st.PidFile, pid)
		}
		if err := checkProcess(pid, st.ProcName); err != nil {
			return 0, err
		}
		if !d.ownsPid(st, pid) {
			return 0, fmt.Errorf("pid file %s names process %d, which is not one of the task's", st.PidFile, pid)
		}
		return pid, nil
	}
	if alive(st.Pid, st.PidStartTicks) {
		return st.Pid, nil
	}
	cg := d.loadCgroup(st)
	if cg == nil {
		return 0, fmt.Errorf("process %d is gone and the task has no pid file", st.Pid)
	}
	pids, err := cg.Procs()
	if err != nil {
		return 0, err
	}
	for _, pid := range pids {
		if ok, _ := nameMatches(pid, st.ProcName); ok && alive(pid, 0) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no process named %q runs in the task's cgroup", st.ProcName)
}

// snapshot reads a task's state for a command that does not change it.
func (d *Driver) snapshot(id string) (*taskState, error) {
	d.locks.Lock(id)
	defer d.locks.Unlock(id)
	return d.load(id)
}
