package process

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// childExit is how one of the driver's children ended.
type childExit struct {
	ID        string // the task the child was started for
	Code      int    // exit status, or 128+signal like a shell
	SIGKILLed bool
	At        time.Time
}

func exitOf(ws syscall.WaitStatus, at time.Time) childExit {
	switch {
	case ws.Exited():
		return childExit{Code: ws.ExitStatus(), At: at}
	case ws.Signaled():
		return childExit{Code: 128 + int(ws.Signal()), SIGKILLed: ws.Signal() == syscall.SIGKILL, At: at}
	}
	return childExit{Code: -1, At: at}
}

// reaper reaps the processes the driver started (its children: the tasks' shims, and
// the processes of tasks an older agent started without one) and records how the latter
// ended. It looks on every SIGCHLD (and every reapSafety, in case a signal went to
// another subscriber first) with wait4(WNOHANG) on its own pids rather than blocking in
// cmd.Wait, so that Close can stop it while the tasks keep running, and so it never
// waits for a child it does not own (the executor runs commands of its own in the same
// process).
type reaper struct {
	d        *Driver
	mu       sync.Mutex
	children map[int]string    // live children: pid -> task ID
	exits    map[int]childExit // reaped, not yet recorded in the task's state
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once
}

func newReaper(d *Driver) *reaper {
	r := &reaper{
		d:        d,
		children: map[int]string{},
		exits:    map[int]childExit{},
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	sigchld := make(chan os.Signal, 1)
	signal.Notify(sigchld, syscall.SIGCHLD)
	go r.loop(sigchld)
	return r
}

// reapSafety is how often the reaper looks without a SIGCHLD.
const reapSafety = 5 * time.Second

// watch makes pid (a child of this process, started for task id) the reaper's.
func (r *reaper) watch(id string, pid int) {
	r.mu.Lock()
	r.children[pid] = id
	r.mu.Unlock()
}

// owns reports whether pid is a child the reaper watches or has reaped.
func (r *reaper) owns(pid int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, live := r.children[pid]
	_, done := r.exits[pid]
	return live || done
}

// status returns how child pid ended, reaping it now if it just exited; ok is false
// while it runs or when it is not the reaper's.
func (r *reaper) status(pid int) (childExit, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.exits[pid]; ok {
		return e, true
	}
	if _, ok := r.children[pid]; !ok {
		return childExit{}, false
	}
	return r.reapLocked(pid)
}

// reapLocked waits for pid without blocking. Called with r.mu held.
func (r *reaper) reapLocked(pid int) (childExit, bool) {
	var ws syscall.WaitStatus
	got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	if errors.Is(err, syscall.EINTR) {
		return childExit{}, false
	}
	if err != nil {
		// ECHILD: not (or no longer) our child; someone else reaped it.
		delete(r.children, pid)
		return childExit{}, false
	}
	if got != pid {
		return childExit{}, false
	}
	e := exitOf(ws, time.Now())
	e.ID = r.children[pid]
	delete(r.children, pid)
	r.exits[pid] = e
	return e, true
}

// forget drops a recorded exit.
func (r *reaper) forget(pid int) {
	r.mu.Lock()
	delete(r.exits, pid)
	r.mu.Unlock()
}

func (r *reaper) close() {
	r.once.Do(func() { close(r.stop) })
	<-r.done
}

func (r *reaper) loop(sigchld chan os.Signal) {
	defer close(r.done)
	defer signal.Stop(sigchld)
	t := time.NewTicker(reapSafety)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-sigchld:
		case <-t.C:
		}
		r.mu.Lock()
		for pid := range r.children {
			r.reapLocked(pid)
		}
		pending := make(map[int]string, len(r.exits))
		for pid := range r.exits {
			pending[pid] = ""
		}
		r.mu.Unlock()
		for pid := range pending {
			r.record(pid)
		}
	}
}

// record writes a reaped child's exit into its task's state. A task busy in Start or
// Stop is skipped (TryLock) so one slow task never stalls the reaper: those hold the
// lock and take the exit themselves through status.
func (r *reaper) record(pid int) {
	e, ok := r.status(pid)
	if !ok {
		return
	}
	id := e.ID
	if !r.d.locks.TryLock(id) {
		return
	}
	defer r.d.locks.Unlock(id)
	st, err := r.d.load(id)
	if err != nil {
		r.forget(pid)
		return
	}
	if r.d.applyChildExit(st, pid, e) {
		if err := r.d.save(st); err != nil {
			r.d.log.Error("recording task exit", "task", id, "err", err)
			return
		}
	}
	r.forget(pid)
}

// applyChildExit records the exit of the driver's child pid in st when that child is
// the task's process (a task started without a shim by an older agent, without a pid
// file). A shim, the child of a newer task, is only reaped: its task's exits are in its
// record.
func (d *Driver) applyChildExit(st *taskState, pid int, e childExit) bool {
	if st.ChildPid != pid || st.ShimPid > 0 {
		return false
	}
	if st.Pid != pid {
		d.log.Debug("start command exited", "task", st.ID, "pid", pid, "code", e.Code)
		return false
	}
	return d.applyExit(st, e)
}

// applyExit records how the task's process ended. An exit already recorded as unknown
// (-1, seen gone before its end was known) is corrected.
func (d *Driver) applyExit(st *taskState, e childExit) bool {
	if st.Exited && st.ExitCode != -1 {
		return false
	}
	msg := fmt.Sprintf("process exited with code %d", e.Code)
	if st.Stopping {
		msg = "stopped"
	}
	st.Exited = false
	st.markExited(e.Code, msg, e.At)
	st.OOMKilled = d.oomKilled(st, e.SIGKILLed)
	if st.OOMKilled {
		st.Message = "OOM killed (memory limit reached)"
	}
	return true
}
