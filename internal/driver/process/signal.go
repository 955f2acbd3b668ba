package process

import (
	"context"
	"fmt"
	"syscall"
)

// Signal sends sig to the task's process (the pid file's, when it has one), and to that
// process only: its children are its own business, as with BCS's signal message.
func (d *Driver) Signal(ctx context.Context, id string, sig syscall.Signal) error {
	d.locks.Lock(id)
	defer d.locks.Unlock(id)
	st, err := d.loadCurrent(id)
	if err != nil {
		return err
	}
	if st.Exited || st.Pid <= 0 || !alive(st.Pid, st.PidStartTicks) {
		return fmt.Errorf("task %s has exited: cannot send it signal %d", id, sig)
	}
	if err := syscall.Kill(st.Pid, sig); err != nil {
		return fmt.Errorf("task %s: signal %d to pid %d: %w", id, sig, st.Pid, err)
	}
	d.log.Info("task signalled", "task", id, "pid", st.Pid, "signal", int(sig))
	return nil
}
