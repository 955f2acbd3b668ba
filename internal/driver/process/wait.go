package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/berthhq/berth/internal/driver"
)

// waitRetry is the first pause before a task is looked at again when its process could
// not be watched (it ended between the look and the pidfd, or Stop holds the task's
// record); it doubles up to waitRetryMax while that goes on.
const (
	waitRetry    = 50 * time.Millisecond
	waitRetryMax = 5 * time.Second
)

// Wait delivers the task's state once it has ended. It watches the task's process
// through a pidfd, which the kernel makes readable when the process exits: Go's network
// poller waits on it, so a hundred waiting tasks cost no thread and no CPU. After the
// process exits the task's record is brought up to date (the shim's recorded exit code,
// or a pid file that names a restarted process, which is then watched in turn).
func (d *Driver) Wait(ctx context.Context, id string) (<-chan driver.State, error) {
	st, err := d.Inspect(ctx, id)
	if err != nil {
		return nil, err
	}
	ch := make(chan driver.State, 1)
	go func() {
		defer close(ch)
		pause := waitRetry
		for st.Running {
			err := waitPidExit(ctx, st.Info.Pid)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				// The process is already gone (ESRCH) or the record is busy: look again.
				select {
				case <-ctx.Done():
					return
				case <-time.After(pause):
				}
				pause = min(2*pause, waitRetryMax)
			} else {
				pause = waitRetry
			}
			st, err = d.Inspect(ctx, id)
			if errors.Is(err, driver.ErrNotFound) {
				st = driver.Gone()
				break
			}
			if err != nil {
				d.log.Warn("wait for task", "task", id, "err", err)
				st.Running = true // keep waiting; the next look may succeed
			}
		}
		ch <- st
	}()
	return ch, nil
}

// waitPidExit blocks until process pid has exited or ctx ends. The pidfd is opened
// non-blocking, so os.NewFile registers it with the runtime's poller.
func waitPidExit(ctx context.Context, pid int) error {
	if pid <= 0 {
		return fmt.Errorf("no process to wait for")
	}
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return fmt.Errorf("pidfd of %d: %w", pid, err)
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("pidfd of %d: %w", pid, err)
	}
	stop := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Now()) })
	defer stop()
	return rc.Read(func(fd uintptr) bool {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
		return err == nil && n > 0
	})
}
