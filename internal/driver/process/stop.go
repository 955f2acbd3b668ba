package process

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"
)

// killSettle bounds the wait for processes to disappear after SIGKILL (one stuck in the
// kernel cannot be helped).
const killSettle = 10 * time.Second

// Stop stops a task: stopCmd first (as the task's user, in its work dir, output to its
// log, bounded by grace), then SIGTERM to the process and its process groups, and when
// grace has passed SIGKILL to everything left in the task's cgroup. It returns once
// nothing of the task runs. grace <= 0 takes the task's KillGrace; when that is 0 too
// the task is killed at once (stopCmd does not run). Stopping an ended task only sweeps
// what may be left in its cgroup.
func (d *Driver) Stop(ctx context.Context, id string, grace time.Duration) error {
	d.locks.Lock(id)
	defer d.locks.Unlock(id)
	st, err := d.loadCurrent(id)
	if err != nil {
		return err
	}
	if st.Exited {
		if cg := d.loadCgroup(st); cg != nil {
			if pids, _ := cg.Procs(); len(pids) > 0 {
				cg.Kill()
				d.waitGone(st, killSettle)
			}
		}
		return nil
	}
	if grace <= 0 {
		grace = st.KillGrace
	}
	deadline := time.Now().Add(grace)
	st.Stopping = true
	if err := d.save(st); err != nil {
		return err
	}
	d.log.Info("stopping task", "task", id, "pid", st.Pid, "grace", grace)

	if st.StopCmd != "" && grace > 0 {
		d.runStopCmd(ctx, st, deadline)
	}
	if !d.gone(st) {
		d.signal(st, syscall.SIGTERM)
		d.waitUntil(ctx, st, deadline)
	}
	if !d.gone(st) {
		d.log.Info("killing task", "task", id, "pid", st.Pid)
		d.killAll(st, syscall.SIGKILL)
	}
	stillThere := !d.waitGone(st, killSettle)
	d.refresh(st)
	if !st.Exited {
		// Gone from the cgroup but its pid not yet reaped or reused: it is over anyway.
		st.markExited(-1, "stopped", time.Now())
	}
	if err := d.save(st); err != nil {
		return err
	}
	if stillThere {
		return fmt.Errorf("task %s: processes still running %s after SIGKILL", id, killSettle)
	}
	return nil
}

func (d *Driver) runStopCmd(ctx context.Context, st *taskState, deadline time.Time) {
	cred, err := d.credential(st)
	if err != nil {
		d.log.Warn("not running stopCmd", "task", st.ID, "err", err)
		return
	}
	logf, _, err := openLog(st.LogPath)
	if err != nil {
		d.log.Warn("not running stopCmd", "task", st.ID, "err", err)
		return
	}
	defer logf.Close()
	sctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	out, errOut := st.logWriters(logf)
	code, err := runShell(sctx, shellSpec{Cmd: st.StopCmd, Dir: st.WorkDir, Cred: cred, Env: st.Env, Out: out, Err: errOut})
	if err != nil || code != 0 {
		d.log.Warn("stopCmd failed", "task", st.ID, "code", code, "err", err)
	}
}

// Remove forgets an ended task: it deletes its cgroup (killing strays left in it) and
// its state. The log file stays. Removing a running task is an error: Stop it first.
func (d *Driver) Remove(ctx context.Context, id string) error {
	d.locks.Lock(id)
	defer d.locks.Unlock(id)
	st, err := d.load(id)
	if err != nil {
		return err
	}
	d.refresh(st)
	if !st.Exited {
		return fmt.Errorf("task %s is running (pid %d): stop it before removing it", id, st.Pid)
	}
	if cg := d.loadCgroup(st); cg != nil {
		if pids, _ := cg.Procs(); len(pids) > 0 {
			cg.Kill()
			d.waitGone(st, killSettle)
		}
		if err := cg.Delete(); err != nil {
			return fmt.Errorf("task %s: remove cgroup %s: %w", id, st.Cgroup, err)
		}
	}
	d.reaper.forget(st.ChildPid)
	if st.ShimPid > 0 && alive(st.ShimPid, st.ShimStartTicks) {
		// Its task is over; a shim still waiting for a process a pid file named, which
		// will never be its child, has nothing left to record.
		syscall.Kill(st.ShimPid, syscall.SIGKILL)
	}
	if err := os.RemoveAll(d.taskDir(id)); err != nil {
		return fmt.Errorf("task %s: remove state: %w", id, err)
	}
	d.releaseIdentity(st)
	return nil
}

// signal sends sig to the task's process and to the process groups of it and of the
// process berth started (each its own session), never to the agent's group.
func (d *Driver) signal(st *taskState, sig syscall.Signal) {
	if st.Pid > 0 && alive(st.Pid, st.PidStartTicks) {
		if ps, err := readStat(st.Pid); err == nil {
			killGroup(ps.Pgid, sig)
		}
		syscall.Kill(st.Pid, sig)
	}
	if st.ChildPid > 0 && st.ChildPid != st.Pid && alive(st.ChildPid, st.ChildStartTicks) {
		killGroup(st.ChildPid, sig)
	}
}

// killAll SIGKILLs everything of the task: its cgroup, or without one its processes and
// their groups.
func (d *Driver) killAll(st *taskState, sig syscall.Signal) {
	if cg := d.loadCgroup(st); cg != nil {
		cg.Kill()
	}
	d.signal(st, sig)
}

// gone reports whether nothing of the task runs: its process has ended and its cgroup
// (when it has one) is empty.
func (d *Driver) gone(st *taskState) bool {
	if st.Pid > 0 && alive(st.Pid, st.PidStartTicks) {
		return false
	}
	if cg := d.loadCgroup(st); cg != nil {
		if pids, err := cg.Procs(); err == nil && len(pids) > 0 {
			return false
		}
	}
	return true
}

// waitUntil polls until the task is gone, the deadline passes or ctx ends.
func (d *Driver) waitUntil(ctx context.Context, st *taskState, deadline time.Time) bool {
	for {
		if d.gone(st) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return d.gone(st)
		case <-time.After(pollInterval):
		}
	}
}

// waitGone waits up to timeout for the task to be gone.
func (d *Driver) waitGone(st *taskState, timeout time.Duration) bool {
	return d.waitUntil(context.Background(), st, time.Now().Add(timeout))
}
