package process

import (
	"errors"
	"fmt"
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

// reaper reaps the processes the driver started (its children) and records how they
// ended. It polls with wait4(WNOHANG) rather than blocking in cmd.Wait so that Close can
// stop it while the tasks keep running, and so it never waits for a child it does not
// own (the executor runs commands of its own in the same process).
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
	go r.loop()
	return r
}

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

func (r *reaper) loop() {
	defer close(r.done)
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
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
	mu := r.d.lock(id)
	if !mu.TryLock() {
		return
	}
	defer mu.Unlock()
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
// the task's process (without a pid file, or while the pid file is not read yet). An
// exit already recorded as unknown (-1, seen gone before it was reaped) is corrected.
func (d *Driver) applyChildExit(st *taskState, pid int, e childExit) bool {
	if st.ChildPid != pid {
		return false
	}
	if st.Pid != pid {
		d.log.Debug("start command exited", "task", st.ID, "pid", pid, "code", e.Code)
		return false
	}
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
