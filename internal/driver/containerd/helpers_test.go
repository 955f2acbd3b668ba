package containerd

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	client "github.com/containerd/containerd/v2/client"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/drivertest"
	"github.com/berthhq/berth/internal/logfile"
)

var (
	ctdMissing string // why the tests skip; empty when a private containerd runs
	ctdAddress string
	ctdDir     string
)

func TestMain(m *testing.M) {
	RunLoggerIfCalled() // the shim starts this test binary as the tasks' logger
	code := func() int {
		stop, err := setupContainerd()
		if err != nil {
			if os.Getenv("BERTH_REQUIRE_CONTAINERD") == "1" {
				fmt.Fprintln(os.Stderr, "BERTH_REQUIRE_CONTAINERD=1 but:", err)
				return 1
			}
			ctdMissing = err.Error()
		}
		defer stop()
		return m.Run()
	}()
	os.Exit(code)
}

// setupContainerd starts the package's private containerd and imports the busybox
// image; stop removes every container left in the namespace, then containerd.
func setupContainerd() (stop func(), err error) {
	stop = func() {}
	if why := drivertest.ContainerdMissing(); why != "" {
		return stop, fmt.Errorf("%s", why)
	}
	// Short: the socket's path must fit a unix socket address.
	if ctdDir, err = os.MkdirTemp("", "ctd"); err != nil {
		return stop, err
	}
	c, err := drivertest.StartContainerd(ctdDir)
	if err != nil {
		os.RemoveAll(ctdDir)
		return stop, err
	}
	ctdAddress = c.Address
	d, err := New(Config{Address: ctdAddress, DataDir: filepath.Join(ctdDir, "setup")})
	if err == nil {
		var archive io.Reader
		if archive, err = drivertest.BusyboxArchive(); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_, err = d.Import(ctx, archive)
			cancel()
		}
	}
	stop = func() {
		if d != nil {
			sweep(d)
			d.Close()
		}
		c.Stop()
		os.RemoveAll(ctdDir)
	}
	if err != nil {
		stop()
		return func() {}, fmt.Errorf("import busybox: %w", err)
	}
	return stop, nil
}

// sweep removes every container of the namespace (all owners'), so no shim outlives
// the package's containerd.
func sweep(d *Driver) {
	ctx, cancel := context.WithTimeout(d.ctx(context.Background()), time.Minute)
	defer cancel()
	cs, err := d.cli.Containers(ctx)
	if err != nil {
		return
	}
	for _, c := range cs {
		if task, err := c.Task(ctx, nil); err == nil {
			task.Delete(ctx, client.WithProcessKill)
		}
		c.Delete(ctx, client.WithSnapshotCleanup)
	}
}

// requireContainerd skips the test without a containerd.
func requireContainerd(t *testing.T) {
	t.Helper()
	if ctdMissing != "" {
		t.Skip(ctdMissing)
	}
}

// newDriver returns a driver on the package's containerd for an owner of the test's
// own (so tests never see each other's tasks), closed at the end of the test.
func newDriver(t *testing.T, mod func(*Config)) (*Driver, Config) {
	t.Helper()
	requireContainerd(t)
	cfg := Config{
		Address:     ctdAddress,
		DataDir:     t.TempDir(),
		RuntimeRoot: filepath.Join(ctdDir, "runc"),
		Owner:       driver.Owner{Cluster: "sha256:" + strings.Repeat("ab", 32), Node: strings.ToLower(t.Name())},
	}
	if mod != nil {
		mod(&cfg)
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, cfg
}

// task is a busybox container task running sh -c script in the host's network.
func task(t *testing.T, name, script string) *driver.Task {
	id := "ns." + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")) + "." + name
	id = strings.NewReplacer("_", "-").Replace(id)
	return &driver.Task{
		ID:     id,
		Name:   name,
		Labels: map[string]string{driver.LabelTask: name, driver.LabelTaskGroup: "ns/tg"},
		Container: &v4.Container{
			Name: name, Image: drivertest.BusyboxImage, Command: "sh", Args: []string{"-c", script},
		},
		LogDir:    t.TempDir(),
		KillGrace: time.Second,
		Setup:     &driver.ContainerSetup{NetworkMode: "HOST"},
	}
}

// start starts tk and removes it at the end of the test.
func start(t *testing.T, d *Driver, tk *driver.Task) driver.State {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := d.Start(ctx, tk)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		d.Remove(ctx, tk.ID)
	})
	if err != nil {
		t.Fatalf("start %s: %v", tk.ID, err)
	}
	return st
}

// waitEnd waits (on Wait's channel) for task id to end and returns its state.
func waitEnd(t *testing.T, d *Driver, id string) driver.State {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ch, err := d.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := <-ch
	if !ok {
		t.Fatalf("task %s did not end within a minute", id)
	}
	return st
}

// logs returns the task's whole log as text.
func logs(t *testing.T, d *Driver, id string, opts driver.LogOptions) string {
	t.Helper()
	rc, err := d.Logs(context.Background(), id, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// exec runs a shell command in the task and requires exit code 0.
func execOK(t *testing.T, d *Driver, id, cmd string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := d.Exec(ctx, id, cmd)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec %q in %s: %v, exit code %d, output %q", cmd, id, err, res.ExitCode, res.Output)
	}
	return string(res.Output)
}

func logLimits(bytes int64, files int) logfile.Limits {
	return logfile.Limits{MaxBytes: bytes, MaxFiles: files}
}
