package drivertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// dockerdLockFile is the machine's lock on its dockerd among test processes: `make test`
// runs the unit tests and the end-to-end tests at once, and CI's end-to-end suite stops
// and starts the machine's dockerd (test/e2e, container_restart_test.go) while another
// package's tests may be talking to it.
var dockerdLockFile = filepath.Join(os.TempDir(), "berth-test-dockerd.lock")

// UseDockerd takes the dockerd lock shared, for tests that need dockerd to keep running
// while they use it (several such packages may hold it at once). The returned function
// releases it.
func UseDockerd(ctx context.Context) (release func(), err error) {
	return lockDockerd(ctx, syscall.LOCK_SH)
}

// RestartingDockerd takes the dockerd lock alone, for a test that stops the machine's
// dockerd: it waits until no other process uses it (UseDockerd). The returned function
// releases it once dockerd answers again.
func RestartingDockerd(ctx context.Context) (release func(), err error) {
	return lockDockerd(ctx, syscall.LOCK_EX)
}

// lockDockerd takes the lock how (flock's LOCK_SH or LOCK_EX), trying again every 100 ms
// until ctx ends: a blocking flock could not be given up.
func lockDockerd(ctx context.Context, how int) (func(), error) {
	f, err := os.OpenFile(dockerdLockFile, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("dockerd lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing the file releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("dockerd lock %s: %w", dockerdLockFile, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("dockerd lock %s: another test process holds it: %w", dockerdLockFile, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
