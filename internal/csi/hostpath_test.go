package csi

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/csi/csidriverbuild"
)

// The Kubernetes host-path CSI driver is a real plugin these tests run against.
var hostpathDriver = &csidriverbuild.Driver{
	Name:    "hostpath",
	Pkg:     "github.com/kubernetes-csi/csi-driver-host-path/cmd/hostpathplugin",
	Version: "v1.17.0",
	BinEnv:  "BERTH_CSI_HOSTPATH",
}

// hostpathName is the name the host-path driver is given and answers to.
const hostpathName = "hostpath.csi.k8s.io"

// runningPlugin is one running driver and a client of it.
type runningPlugin struct {
	client *Client
	node   string
	dir    string // the temp dir holding its socket, state and the test's mounts
}

// startHostpath runs the driver as node on a socket in a fresh temp dir and waits until
// it answers Probe.
func startHostpath(t *testing.T, node string) *runningPlugin {
	bin := csidriverbuild.Require(t, hostpathDriver)
	dir, err := os.MkdirTemp("", "csi") // short: a socket address holds 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "csi.sock")
	args := []string{"--endpoint", "unix://" + sock, "--nodeid", node, "--drivername", hostpathName}
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
	c, err := New(hostpathName, sock, Options{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	waitReady(t, c, "hostpathplugin")
	return &runningPlugin{client: c, node: node, dir: dir}
}

// hasFlag reports whether the driver's usage lists -name (its flags changed across
// versions).
func hasFlag(bin, name string) bool {
	out, _ := exec.Command(bin, "-h").CombinedOutput() // flag's -h exits 2
	return bytes.Contains(out, []byte("-"+name+" "))
}

// waitReady waits until the driver called what answers Probe.
func waitReady(t *testing.T, c *Client, what string) {
	t.Helper()
	var err error
	for range 100 { // 100 × 100 ms: the driver listens within a second
		var ready bool
		if ready, err = c.Probe(context.Background()); err == nil && ready {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not become ready: %v", what, err)
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
