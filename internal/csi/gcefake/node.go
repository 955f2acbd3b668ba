package gcefake

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
)

// lockFile serializes the fake clouds of this machine: each one installs the same
// stand-in tools and device directories, which two at once (internal/csi's test and
// test/e2e's, run in parallel by `go test ./...`) would remove under each other.
const lockFile = "/run/berth-test-gcefake.lock"

// lockWait bounds the wait for another test's cloud: the longest holds it for about a
// minute.
const lockWait = 5 * time.Minute

// prepareNode makes this machine the cloud's instance for the test: it takes the
// machine's lock, installs the stand-in udev tools and makes /dev/disk/by-id, and undoes
// it all, lock last, when the test ends.
func prepareNode(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the fake GCE cloud attaches loop devices and makes device nodes: it needs root")
	}
	lockNode(t)
	installUdevTools(t)
	makeByIDDir(t)
}

// lockNode takes lockFile, polling under lockWait, and releases it when the test ends.
func lockNode(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(lockFile, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(lockWait)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		f.Close()
		t.Fatal(fmt.Errorf("lock %s (another test's fake GCE cloud, waited up to %s): %w", lockFile, lockWait, err))
	}
	t.Cleanup(func() { f.Close() }) // closing the only descriptor releases the lock
}
