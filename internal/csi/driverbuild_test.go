package csi

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

// builtDriver is a real CSI driver these tests run against. It is built with `go install
// pkg@version` in an empty directory, so berth's go.mod never sees its modules, and cached
// by version: a cold build takes about as long as downloading and compiling its modules,
// a warm run only stats the binary.
type builtDriver struct {
	// name is the driver's short name, as BERTH_REQUIRE_CSI lists it.
	name    string
	pkg     string
	version string
	// ldflags are passed to go install: some mains refuse to start without a version
	// stamped in at build time.
	ldflags string
	// binEnv names a variable that may point at a binary built elsewhere.
	binEnv string

	once sync.Once
	bin  string
	err  error
}

// csiCacheDir is where built drivers are kept between runs: $BERTH_CSI_CACHE, else
// /var/cache/berth-test/csi (the tests run as root), else the user's cache directory.
// .ci/run prebuilds the GCE PD driver there.
func csiCacheDir() (string, error) {
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
func (d *builtDriver) binName() string { return path.Base(d.pkg) + "-" + d.version }

// build returns the driver binary: $binEnv when set, else the cached build, building it
// on the first call.
func (d *builtDriver) build(t *testing.T) (string, error) {
	d.once.Do(func() {
		if bin := os.Getenv(d.binEnv); d.binEnv != "" && bin != "" {
			d.bin = bin
			_, d.err = os.Stat(bin)
			return
		}
		dir, err := csiCacheDir()
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
func (d *builtDriver) install(t *testing.T, dir string) error {
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
	cmd := exec.Command("go", "install", "-ldflags="+d.ldflags, d.pkg+"@"+d.version)
	cmd.Dir = tmp // outside any module: go install pkg@version builds the driver's own module
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOWORK=off", "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go install %s@%s: %w: %s", d.pkg, d.version, err, strings.TrimSpace(out.String()))
	}
	t.Logf("built %s %s in %s", d.name, d.version, time.Since(start).Round(time.Second))
	// Renamed into place so that a concurrent run sees the whole binary or none.
	return os.Rename(filepath.Join(tmp, path.Base(d.pkg)), d.bin)
}

// csiRequired reports whether BERTH_REQUIRE_CSI makes the driver's skips failures: "1"
// for every driver, or a comma-separated list of driver names (CI lists the drivers its
// module proxy serves).
func csiRequired(name string) bool {
	v := os.Getenv("BERTH_REQUIRE_CSI")
	return v == "1" || slices.Contains(strings.Split(v, ","), name)
}

// requireDriver skips the test unless the driver can run here: as root (drivers mount),
// with the driver built. When BERTH_REQUIRE_CSI names the driver, it fails instead.
func requireDriver(t *testing.T, d *builtDriver) string {
	t.Helper()
	skip := t.Skipf
	if csiRequired(d.name) {
		skip = t.Fatalf
	}
	if os.Geteuid() != 0 {
		skip("the %s CSI driver mounts: run as root", d.name)
	}
	bin, err := d.build(t)
	if err != nil {
		skip("the %s CSI driver cannot be built here: %v", d.name, err)
	}
	return bin
}
