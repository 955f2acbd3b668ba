package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/berthhq/berth/internal/driver"
)

// The steps of Start, in order: the work dir and what goes into it, the log, the
// cgroup and the shim that starts startCmd, then the checks after startGracePeriod.

// checkStartable refuses a task the process driver cannot start.
func checkStartable(t *driver.Task) error {
	if t == nil || t.Process == nil {
		return errors.New("process driver: task has no process spec")
	}
	if !validID(t.ID) {
		return fmt.Errorf("process driver: invalid task id %q", t.ID)
	}
	if strings.TrimSpace(t.Process.StartCmd) == "" {
		return fmt.Errorf("task %s: startCmd is empty", t.ID)
	}
	return nil
}

// startSteps runs the steps of Start on a new task's state; on an error, what they
// started is left for Start's abort.
func (d *Driver) startSteps(ctx context.Context, t *driver.Task, st *taskState, cred *credential) error {
	sb := d.sandboxOf(st)
	if err := d.prepareWorkDir(ctx, t, st, sb, cred); err != nil {
		return err
	}
	logf, logOffset, err := openTaskLog(st.LogPath, cred)
	if err != nil {
		return err
	}
	pid, err := d.launch(t, st, cred, logf)
	if err != nil {
		return err
	}
	d.log.Info("task started", "task", t.ID, "pid", pid, "cmd", t.Process.StartCmd)
	if t.RunToEnd {
		return nil // its end is its result, which Wait delivers
	}
	if err := d.waitGrace(ctx, st, logOffset); err != nil {
		return err
	}
	return d.confirmStart(ctx, st, sb, pid, logOffset)
}

// prepareWorkDir makes the work dir first (packages and files may go into it, and a
// directory created by them would not get its mode), then fetches the packages, writes
// the files, links the pod's volumes and clears a pid file left from an earlier run.
func (d *Driver) prepareWorkDir(ctx context.Context, t *driver.Task, st *taskState, sb sandbox, cred *credential) error {
	workPlace, err := sb.resolve("workPath", st.WorkDir)
	if err != nil {
		return err
	}
	workRoot, err := ensureDir(workPlace, cred)
	if err != nil {
		return fmt.Errorf("workPath: %w", err)
	}
	workRoot.Close()
	if err := d.fetchAll(ctx, t.Process.URIs, st.WorkDir, sb, cred); err != nil {
		return err
	}
	if err := writeFiles(t.Files, st.WorkDir, sb, cred); err != nil {
		return err
	}
	if err := makeLinks(t.Links, st.WorkDir, sb, cred); err != nil {
		return err
	}
	if st.PidFile != "" {
		return clearPidFile(sb, st.PidFile, cred)
	}
	return nil
}

// openTaskLog opens the task's log for appending, owned by the task's user, and returns
// where this run's output begins.
func openTaskLog(path string, cred *credential) (*os.File, int64, error) {
	logf, logOffset, err := openLog(path)
	if err == nil {
		// The user's process may open its own output again (/dev/stdout), which the
		// kernel checks against the file's owner and mode.
		if err = logf.Chmod(0o640); err == nil { // a log of an earlier version was 0644
			err = cred.chownFile(logf)
		}
		if err != nil {
			err = fmt.Errorf("log: %w", err)
		}
	}
	if err != nil {
		if logf != nil {
			logf.Close()
		}
		return nil, 0, err
	}
	return logf, logOffset, nil
}

// launch creates the task's cgroup and starts startCmd under its shim, output to logf
// (which it closes), and records the task before the grace period, so that an agent
// that dies now still finds it. It returns the pid of the process it started.
func (d *Driver) launch(t *driver.Task, st *taskState, cred *credential, logf *os.File) (int, error) {
	d.removeLeftoverCgroup(t.ID)
	cg, err := d.createCgroup(t.ID, resourcesOf(t))
	if err != nil {
		logf.Close()
		return 0, err
	}
	if cg != nil {
		st.Cgroup, st.CgroupMode = d.cgroupPath(t.ID), string(d.cgroups)
	}
	procs, err := d.startShim(st, shellSpec{Cmd: execIfSimple(t.Process.StartCmd), Dir: st.WorkDir, Cred: cred, Env: st.Env, Cgroup: cg}, logf)
	logf.Close()
	if err != nil {
		return 0, err
	}
	pid := procs.child
	ps, _ := readStat(pid)
	shimStat, _ := readStat(procs.shim)
	st.Pid, st.ChildPid, st.ShimPid = pid, pid, procs.shim
	st.PidStartTicks, st.ChildStartTicks, st.ShimStartTicks = ps.StartTicks, ps.StartTicks, shimStat.StartTicks
	st.StartAt = time.Now()
	return pid, d.save(st)
}

// confirmStart checks, after the grace period, that the task's process runs: the pid
// file's pid (which must be the task's) or the process started, named procName; and
// records the process it found.
func (d *Driver) confirmStart(ctx context.Context, st *taskState, sb sandbox, pid int, logOffset int64) error {
	target := pid
	if st.PidFile != "" {
		var err error
		if target, err = sb.readPidFile(st.PidFile); err != nil {
			// A start command that failed right at the end of the grace period (its exit
			// not yet recorded when the period ended) says why, not the pid file it never
			// wrote.
			if e, ok := d.failedStart(st); ok {
				d.applyExit(st, e)
				return d.exitError(st, logOffset)
			}
			return fmt.Errorf("after startGracePeriod %s: %w", st.StartGrace, err)
		}
		// A pid file names the task's process only when that process is the task's: in
		// its cgroup, or below its shim. Anything else it names is another's to keep.
		if !alive(target, 0) {
			// Its process wrote it and ended (a daemon that could not bind its port, say):
			// what it wrote says why.
			tail := logTail(st.LogPath, logOffset, 512)
			if tail != "" {
				tail = ": " + tail
			}
			return fmt.Errorf("after startGracePeriod %s: pid file %s names process %d, which is not running%s",
				st.StartGrace, st.PidFile, target, tail)
		}
		if !d.ownsPid(st, target) {
			return fmt.Errorf("after startGracePeriod %s: pid file %s names process %d, which is not one of the task's (not in its cgroup nor below its shim)",
				st.StartGrace, st.PidFile, target)
		}
	}
	if err := awaitName(ctx, target, st.ProcName); err != nil {
		if e, ok := d.startExit(st); ok && target == pid {
			d.applyExit(st, e) // it ended right at the end of the grace period
			return d.exitError(st, logOffset)
		}
		return fmt.Errorf("after startGracePeriod %s: %w", st.StartGrace, err)
	}
	if target != pid {
		ps, _ := readStat(target)
		st.Pid, st.PidStartTicks = target, ps.StartTicks
	}
	return d.save(st)
}

// failedStart returns how the start command ended when it is gone with a non-zero exit
// (waiting briefly for its shim to record it); false while it runs or when it exited 0
// (with a pid file, how a daemon starts).
func (d *Driver) failedStart(st *taskState) (childExit, bool) {
	if alive(st.ChildPid, st.ChildStartTicks) {
		return childExit{}, false
	}
	e, ok := d.awaitRecordedExit(st, st.ChildPid)
	return e, ok && e.Code != 0
}
