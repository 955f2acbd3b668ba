package drivertest

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// Users of dockerd share it; a restart waits until none is left, and holds off new
// users until it is done.
func TestDockerdLock(t *testing.T) {
	dockerdLockFile = filepath.Join(t.TempDir(), "dockerd.lock")
	short := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	first, err := UseDockerd(short())
	if err != nil {
		t.Fatal(err)
	}
	second, err := UseDockerd(short())
	if err != nil {
		t.Fatalf("a second user: %v", err)
	}
	if _, err := RestartingDockerd(short()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a restart while two use dockerd: %v", err)
	}
	first()
	if _, err := RestartingDockerd(short()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a restart while one uses dockerd: %v", err)
	}
	second()
	restart, err := RestartingDockerd(short())
	if err != nil {
		t.Fatalf("a restart once nobody uses dockerd: %v", err)
	}
	if _, err := UseDockerd(short()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a user during a restart: %v", err)
	}
	restart()
	done, err := UseDockerd(short())
	if err != nil {
		t.Fatalf("a user after the restart: %v", err)
	}
	done()
}
