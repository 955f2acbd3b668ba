package csi

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The Kubernetes host-path CSI driver is the real plugin these tests run against. It is
// built with `go install pkg@version` in an empty directory, so berth's go.mod never sees
// its k8s.io modules, and cached by version: a cold build takes about as long as
// downloading and compiling its modules, a warm run only stats the binary.
const (
	hostpathPkg     = "github.com/kubernetes-csi/csi-driver-host-path/cmd/hostpathplugin"
	hostpathVersion = "v1.17.0"
	hostpathDriver  = "hostpath.csi.k8s.io"
)

var (
	hostpathOnce sync.Once
	hostpathBin  string
	hostpathErr  error
)

// hostpathCacheDir is where built drivers are kept between runs: $BERTH_CSI_CACHE, else
// /var/cache/berth-test/csi (the tests run as root), else the user's cache directory.
func hostpathCacheDir() (string, error) {
	if d := os.Getenv("BERTH_CSI_CACHE"); d != "" {
		return d, nil
	}
	if os.Geteuid() == 0 {
		return "/var/cache/berth-test/csi", nil
	}
	d, err := os.UserCacheDir()
	return filepath.Join(d, "berth-test", "csi"), err
}

// buildHostpath returns the driver binary: $BERTH_CSI_HOSTPATH when set (one built
// elsewhere), else the cached build, building it on the first call.
func buildHostpath(t *testing.T) (string, error) {
	hostpathOnce.Do(func() {
		if bin := os.Getenv("BERTH_CSI_HOSTPATH"); bin != "" {
			hostpathBin = bin
			_, hostpathErr = os.Stat(bin)
			return
		}
		dir, err := hostpathCacheDir()
		if err != nil {
			hostpathErr = err
			return
		}
		hostpathBin = filepath.Join(dir, "hostpathplugin-"+hostpathVersion)
		if _, err := os.Stat(hostpathBin); err == nil {
			return
		}
		hostpathErr = installHostpath(t, dir)
	})
	return hostpathBin, hostpathErr
}

func installHostpath(t *testing.T, dir string) error {
	tmp, err := os.MkdirTemp("", "hostpath-build")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	cmd := exec.Command("go", "install", hostpathPkg+"@"+hostpathVersion)
	cmd.Dir = tmp // outside any module: go install pkg@version builds the driver's own module
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOWORK=off", "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go install %s@%s: %w: %s", hostpathPkg, hostpathVersion, err, strings.TrimSpace(out.String()))
	}
	t.Logf("built hostpathplugin %s in %s", hostpathVersion, time.Since(start).Round(time.Second))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Renamed into place so that a concurrent run sees the whole binary or none.
	return os.Rename(filepath.Join(tmp, "hostpathplugin"), hostpathBin)
}

// requireCSI skips the test unless the host-path driver can run here: as root (it
// mounts), with the driver built. Under BERTH_REQUIRE_CSI=1 (CI) it fails instead.
func requireCSI(t *testing.T) string {
	t.Helper()
	skip := t.Skipf
	if os.Getenv("BERTH_REQUIRE_CSI") == "1" {
		skip = t.Fatalf
	}
	if os.Geteuid() != 0 {
		skip("the host-path CSI driver mounts: run as root")
	}
	bin, err := buildHostpath(t)
	if err != nil {
		skip("the host-path CSI driver cannot be built here: %v", err)
	}
	return bin
}

// hostpathPlugin is one running driver and a client of it.
type hostpathPlugin struct {
	client *Client
	node   string
	dir    string // the temp dir holding its socket, state and the test's mounts
}

// startHostpath runs the driver as node on a socket in a fresh temp dir and waits until
// it answers Probe.
func startHostpath(t *testing.T, node string) *hostpathPlugin {
	bin := requireCSI(t)
	dir, err := os.MkdirTemp("", "csi") // short: a socket address holds 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "csi.sock")
	args := []string{"--endpoint", "unix://" + sock, "--nodeid", node, "--drivername", hostpathDriver}
	if hasFlag(bin, "statedir") {
		args = append(args, "--statedir", filepath.Join(dir, "state"))
	}
	cmd := exec.Command(bin, args...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited already
		cmd.Wait()                          //nolint:errcheck // killed on purpose
		unmountUnder(t, dir)
		os.RemoveAll(dir)
		if t.Failed() {
			t.Logf("hostpathplugin output:\n%s", logs.String())
		}
	})
	c, err := New(hostpathDriver, sock, Options{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	waitReady(t, c)
	return &hostpathPlugin{client: c, node: node, dir: dir}
}

// hasFlag reports whether the driver's usage lists -name (its flags changed across
// versions).
func hasFlag(bin, name string) bool {
	out, _ := exec.Command(bin, "-h").CombinedOutput() // flag's -h exits 2
	return bytes.Contains(out, []byte("-"+name+" "))
}

func waitReady(t *testing.T, c *Client) {
	t.Helper()
	var err error
	for range 100 { // 100 × 100 ms: the driver listens within a second
		var ready bool
		if ready, err = c.Probe(context.Background()); err == nil && ready {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("hostpathplugin did not become ready: %v", err)
}

// unmountUnder lazily unmounts whatever a failed test left mounted below dir, deepest
// first, so that removing dir cannot reach into a mounted volume.
func unmountUnder(t *testing.T, dir string) {
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return
	}
	var mounts []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
			mounts = append(mounts, f[1])
		}
	}
	for i := len(mounts) - 1; i >= 0; i-- {
		if err := syscall.Unmount(mounts[i], syscall.MNT_DETACH); err != nil {
			t.Logf("unmount %s: %v", mounts[i], err)
		}
	}
}
