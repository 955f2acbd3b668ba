// Package csidriverbuild builds the real third-party CSI drivers that berth's tests run
// (internal/csi's client tests, test/e2e's volumes) and caches them between runs. It is
// used by tests only.
//
// A driver is built with `go install pkg@version` in an empty directory, so berth's
// go.mod never sees its modules, and cached by version: a cold build takes about as long
// as downloading and compiling its modules, a warm run only stats the binary.
package csidriverbuild

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Driver is a real CSI driver tests run against.
type Driver struct {
	// Name is the driver's short name, as BERTH_REQUIRE_CSI lists it.
	Name    string
	Pkg     string
	Version string
	// Ldflags are passed to go install: some mains refuse to start without a version
	// stamped in at build time.
	Ldflags string
	// BinEnv names a variable that may point at a binary built elsewhere.
	BinEnv string

	once sync.Once
	bin  string
	err  error
}

// CacheDir is where built drivers are kept between runs: $BERTH_CSI_CACHE, else
// /var/cache/berth-test/csi (the tests run as root), else the user's cache directory.
// .ci/run prebuilds the GCE PD driver there.
func CacheDir() (string, error) {
	if d := os.Getenv("BERTH_CSI_CACHE"); d != "" {
		return d, nil
	}
	if os.Geteuid() == 0 {
		return "/var/cache/berth-test/csi", nil
	}
	d, err := os.UserCacheDir()
	return filepath.Join(d, "berth-test", "csi"), err
}

// binName is the cached binary's name: the command's name and the version.
func (d *Driver) binName() string { return path.Base(d.Pkg) + "-" + d.Version }

// Build returns the driver binary: $BinEnv when set, else the cached build, building it
// on the first call of the process.
func (d *Driver) Build(t testing.TB) (string, error) {
	d.once.Do(func() {
		if bin := os.Getenv(d.BinEnv); d.BinEnv != "" && bin != "" {
			d.bin = bin
			_, d.err = os.Stat(bin)
			return
		}
		dir, err := CacheDir()
		if err != nil {
			d.err = err
			return
		}
		d.bin = filepath.Join(dir, d.binName())
		if _, err := os.Stat(d.bin); err == nil {
			return
		}
		d.err = d.install(t, dir)
	})
	return d.bin, d.err
}

// install builds the driver into dir under an exclusive lock on <bin>.lock, which .ci/run
// takes too (flock) while it prebuilds: a test that starts during that build waits for
// it instead of building the same binary a second time.
func (d *Driver) install(t testing.TB, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(d.bin+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	if _, err := os.Stat(d.bin); err == nil {
		return nil // built by whoever held the lock
	}
	tmp, err := os.MkdirTemp(dir, "build") // in dir: renamed into place, not copied
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	cmd := exec.Command("go", "install", "-ldflags="+d.Ldflags, d.Pkg+"@"+d.Version)
	cmd.Dir = tmp // outside any module: go install pkg@version builds the driver's own module
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOWORK=off", "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go install %s@%s: %w: %s", d.Pkg, d.Version, err, strings.TrimSpace(out.String()))
	}
	t.Logf("built %s %s in %s", d.Name, d.Version, time.Since(start).Round(time.Second))
	// Renamed into place so that a concurrent run sees the whole binary or none.
	return os.Rename(filepath.Join(tmp, path.Base(d.Pkg)), d.bin)
}

// Required reports whether BERTH_REQUIRE_CSI makes the named driver's skips failures:
// "1" for every driver, or a comma-separated list of driver names (CI lists the drivers
// its module proxy serves).
func Required(name string) bool {
	v := os.Getenv("BERTH_REQUIRE_CSI")
	return v == "1" || slices.Contains(strings.Split(v, ","), name)
}

// Skip skips the test with the reason, or fails it when BERTH_REQUIRE_CSI names the
// driver.
func Skip(t testing.TB, name, format string, args ...any) {
	t.Helper()
	if Required(name) {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// Require returns the driver's binary, or skips the test unless the driver can run here:
// as root (drivers mount), with the driver built. When BERTH_REQUIRE_CSI names the
// driver, it fails instead.
func Require(t testing.TB, d *Driver) string {
	t.Helper()
	if os.Geteuid() != 0 {
		Skip(t, d.Name, "the %s CSI driver mounts: run as root", d.Name)
	}
	bin, err := d.Build(t)
	if err != nil {
		Skip(t, d.Name, "the %s CSI driver cannot be built here: %v", d.Name, err)
	}
	return bin
}
