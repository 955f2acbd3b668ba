package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/drivertest"
)

// Test images, built locally since nothing can be pulled. test/busybox:1 is shared with
// other packages (no entrypoint); the entrypoint image is this package's.
const (
	imgPlain = drivertest.BusyboxImage
	imgEntry = "test/berth-docker-ep:1"
	imgUser  = "test/berth-docker-user:1"
)

// testLabel marks this package's containers so a run can sweep what it left.
const testLabel = "berth.test.docker"

var (
	dockerMissing string // why the Docker tests skip; empty when dockerd answers
	rawCli        *client.Client
	runTag        = strconv.Itoa(os.Getpid())
)

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

// runTests runs the package's tests while it holds the machine's dockerd (no other test
// process restarts it meanwhile) and returns their exit code.
func runTests(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	release, err := drivertest.UseDockerd(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer release()
	if err := setupDocker(); err != nil {
		if os.Getenv("BERTH_REQUIRE_DOCKER") == "1" {
			fmt.Fprintln(os.Stderr, "BERTH_REQUIRE_DOCKER=1 but:", err)
			return 1
		}
		dockerMissing = err.Error()
	}
	// The driver builds its sandbox image when missing; a run that built it removes it.
	hadSandboxImage := rawCli != nil && imagePresent(DefaultNetworkImage)
	code := m.Run()
	if rawCli != nil {
		sweep()
		if !hadSandboxImage && imagePresent(DefaultNetworkImage) {
			rawCli.ImageRemove(context.Background(), DefaultNetworkImage, client.ImageRemoveOptions{})
		}
		rawCli.Close()
	}
	return code
}

// setupDocker connects to dockerd and builds the test images when they are missing.
func setupDocker() error {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
	defer pcancel()
	if _, err := cli.Ping(pctx, client.PingOptions{}); err != nil {
		cli.Close()
		return fmt.Errorf("docker is not available: %w", err)
	}
	rawCli = cli
	if err := ensureImage(ctx, imgPlain, importBusybox); err != nil {
		return err
	}
	if err := ensureImage(ctx, imgEntry, buildEntrypointImage); err != nil {
		return err
	}
	return ensureImage(ctx, imgUser, buildUserImage)
}

func ensureImage(ctx context.Context, ref string, build func(context.Context) error) error {
	if _, err := rawCli.ImageInspect(ctx, ref); err == nil {
		return nil
	} else if !cerrdefs.IsNotFound(err) {
		return err
	}
	if err := build(ctx); err != nil {
		return fmt.Errorf("build test image %s: %w", ref, err)
	}
	return nil
}

// importBusybox imports drivertest's busybox root file system as imgPlain.
func importBusybox(ctx context.Context) error {
	rootfs, err := drivertest.BusyboxRootfs()
	if err != nil {
		return err
	}
	rc, err := rawCli.ImageImport(ctx, client.ImageImportSource{Source: rootfs, SourceName: "-"}, imgPlain, client.ImageImportOptions{})
	if err != nil {
		return err
	}
	defer rc.Close()
	return streamError(rc)
}

// buildEntrypointImage builds FROM test/busybox:1 with ENTRYPOINT ["/bin/sh","-c"].
func buildEntrypointImage(ctx context.Context) error {
	return buildImage(ctx, imgEntry, "FROM "+imgPlain+"\nENTRYPOINT [\"/bin/sh\",\"-c\"]\n", nil)
}

// buildUserImage builds FROM test/busybox:1 with an /etc/passwd and /etc/group that
// name the user app (4321) of the group apps (4322), and USER app.
func buildUserImage(ctx context.Context) error {
	return buildImage(ctx, imgUser, "FROM "+imgPlain+"\nCOPY passwd group /etc/\nUSER app\n", map[string]string{
		"passwd": "root:x:0:0:root:/root:/bin/sh\n# a comment\nbroken\napp:x:4321:4322:app:/tmp:/bin/sh\n",
		"group":  "root:x:0:\napps:x:4322:\nother:x:5000:\n",
	})
}

// buildImage builds tag from a Dockerfile and files of its context, with the legacy
// builder (BuildKit is not available through this daemon's API).
func buildImage(ctx context.Context, tag, dockerfile string, files map[string]string) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name, body string) {
		tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))})
		tw.Write([]byte(body))
	}
	add("Dockerfile", dockerfile)
	for name, body := range files {
		add(name, body)
	}
	if err := tw.Close(); err != nil {
		return err
	}
	resp, err := rawCli.ImageBuild(ctx, &buf, client.ImageBuildOptions{Tags: []string{tag}, Version: build.BuilderV1, Remove: true, ForceRemove: true})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return streamError(resp.Body)
}

// sweep removes every container this run created, whatever a failed test left.
func sweep() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := rawCli.ContainerList(ctx, client.ContainerListOptions{All: true})
	if err != nil {
		return
	}
	for _, c := range list.Items {
		if c.Labels[testLabel] == runTag {
			rawRemove(ctx, c.ID)
		}
	}
}

// rawContainer is docker inspect without the driver.
func rawContainer(ctx context.Context, ref string) (container.InspectResponse, error) {
	res, err := rawCli.ContainerInspect(ctx, ref, client.ContainerInspectOptions{})
	return res.Container, err
}

// rawRemove is docker rm -f without the driver.
func rawRemove(ctx context.Context, ref string) error {
	_, err := rawCli.ContainerRemove(ctx, ref, client.ContainerRemoveOptions{Force: true})
	return err
}

// needDocker skips a test when dockerd is not there (BERTH_REQUIRE_DOCKER=1 fails the
// run in TestMain instead).
func needDocker(t *testing.T) {
	t.Helper()
	if dockerMissing != "" {
		t.Skip("skipping: " + dockerMissing + " (set BERTH_REQUIRE_DOCKER=1 to fail instead)")
	}
}

// parallelDriver is how most tests begin: they need Docker, run in parallel, and use a
// driver of their own.
func parallelDriver(t *testing.T) *Driver {
	t.Helper()
	needDocker(t)
	t.Parallel()
	return newDriver(t)
}

func newDriver(t *testing.T) *Driver {
	t.Helper()
	d, err := New(Config{DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// newTask is a container task with a run-unique ID, removed when the test ends.
func newTask(t *testing.T, d *Driver, name, img, command string, args ...string) *driver.Task {
	t.Helper()
	id := "test." + runTag + "." + strings.ReplaceAll(t.Name(), "/", "-") + "." + name
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		d.Remove(ctx, id)
	})
	return &driver.Task{
		ID:     id,
		Name:   name,
		Labels: map[string]string{driver.LabelTaskGroup: "test/" + t.Name(), driver.LabelTask: name, testLabel: runTag},
		Container: &v4.Container{
			Image:           img,
			ImagePullPolicy: v4.PullIfNotPresent,
			Command:         command,
			Args:            args,
		},
		Setup: &driver.ContainerSetup{NetworkMode: "BRIDGE"},
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func mustStart(t *testing.T, d *Driver, task *driver.Task) driver.State {
	t.Helper()
	st, err := d.Start(ctxT(t, 30*time.Second), task)
	if err != nil {
		t.Fatalf("start %s: %v", task.ID, err)
	}
	return st
}

// waitLog follows the task's logs until want appears.
func waitLog(t *testing.T, d *Driver, id, want string) string {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	rc, err := d.Logs(ctx, id, driver.LogOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var got []byte
	buf := make([]byte, 4096)
	for !strings.Contains(string(got), want) {
		n, err := rc.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			t.Fatalf("logs of %s: %q so far, want %q: %v", id, got, want, err)
		}
	}
	return string(got)
}

// rawInspect is docker inspect without the driver, to check what it asked Docker for.
func rawInspect(t *testing.T, id string) container.InspectResponse {
	t.Helper()
	c, err := rawContainer(context.Background(), containerName(id))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func isNotFound(err error) bool { return errors.Is(err, driver.ErrNotFound) }

func imagePresent(ref string) bool {
	_, err := rawCli.ImageInspect(context.Background(), ref)
	return err == nil
}
