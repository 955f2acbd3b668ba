package flexvolume

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// newTestManager returns a Manager over a fresh plugin dir, trusting the test's user.
func newTestManager(t *testing.T, timeout time.Duration) *Manager {
	t.Helper()
	m, err := New(Options{PluginDir: t.TempDir(), StateDir: filepath.Join(t.TempDir(), "flexvolumes"), NodeName: "node-1",
		Timeout: timeout, TrustedUID: os.Getuid(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// installDriver writes a shell script as driver name ("vendor/driver") of m's plugin dir.
// LOG in the script is replaced by a file the driver appends its calls to, which the
// returned function reads.
func installDriver(t *testing.T, m *Manager, name, script string) func() string {
	t.Helper()
	vendor, drv, _ := strings.Cut(name, "/")
	dir := filepath.Join(m.opts.PluginDir, vendor+"~"+drv)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "calls.log")
	script = strings.ReplaceAll(script, "LOG", log)
	p := filepath.Join(dir, drv)
	if err := os.WriteFile(p+".new", []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".new", p); err != nil { // a new inode: a running old one is not "text busy"
		t.Fatal(err)
	}
	return func() string {
		b, _ := os.ReadFile(log)
		return string(b)
	}
}

// bindDriver mounts the option "source" at the mount dir with a bind mount, and keeps
// the options it got in LOG.opts.
const bindDriver = `#!/bin/sh
op=$1; shift
echo "$op" >> LOG
case $op in
init) echo '{"status":"Success","capabilities":{"attach":false}}' ;;
mount)
	printf '%s' "$2" > LOG.opts
	src=$(printf '%s' "$2" | sed -n 's/.*"source":"\([^"]*\)".*/\1/p')
	mkdir -p "$1"
	if mount --bind "$src" "$1" 2>/dev/null; then echo '{"status":"Success"}'; else echo '{"status":"Failure","message":"bind mount failed"}'; fi ;;
unmount)
	if umount "$1" 2>/dev/null; then echo '{"status":"Success"}'; else echo '{"status":"Failure","message":"umount failed"}'; fi ;;
*) echo '{"status":"Not supported"}' ;;
esac
`

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("mounts need root")
	}
}

func mounted(t *testing.T, dir string) bool {
	t.Helper()
	ok, err := isMountPoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func flex(driver string, opts map[string]string) *v4.FlexVolume {
	return &v4.FlexVolume{Driver: driver, FSType: "ext4", Options: opts}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
