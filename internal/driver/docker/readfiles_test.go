package docker

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/drivertest"
	"github.com/berthhq/berth/internal/stepio"
)

// putStore keeps what a collection stores.
type putStore map[string][]byte

func (putStore) Get(context.Context, string) (io.ReadCloser, error) { return nil, fs.ErrNotExist }

func (s putStore) Put(_ context.Context, name string, body io.ReadSeeker, size int64) (v4.StoredArtifact, error) {
	b, err := io.ReadAll(body)
	s[name] = b
	return v4.StoredArtifact{Name: name, Size: size}, err
}

// TestStepFiles runs a container step as the executor does: inputs staged on the host
// and bound in, outputs read after the exit through the Engine API's archive route,
// where a link the container made to a node file names the container's file instead.
func TestStepFiles(t *testing.T) {
	d := parallelDriver(t)
	secret := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(secret, []byte("root:secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	stage := t.TempDir()
	root, err := os.OpenRoot(stage)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := stepio.Place(root, "raw", strings.NewReader("inline"), 0, stepio.DefaultLimits); err != nil {
		t.Fatal(err)
	}
	if err := root.MkdirAll("model", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := stepio.Place(root, "model/w.bin", strings.NewReader("weights"), 0, stepio.DefaultLimits); err != nil {
		t.Fatal(err)
	}

	task := newTask(t, d, "main", imgPlain, "sh", "-c",
		"mkdir -p /out && cat /in/raw > /out/p && cp -r /in/model /out/dir && ln -s "+secret+" /leak && ln -s /proc/1/root"+secret+" /leak2 && echo done")
	task.Setup.Volumes = []driver.Mount{{HostPath: filepath.Join(stage, "raw"), ContainerPath: "/in/raw"},
		{HostPath: filepath.Join(stage, "model"), ContainerPath: "/in/model"}}
	task.RunToEnd = true // a step's main task ends at once
	mustStart(t, d, task)
	if st := drivertest.WaitEnded(t, d, task.ID, 30*time.Second); st.Info.ExitCode != 0 {
		t.Fatalf("exit %+v", st.Info)
	}
	src := stepio.TarSource{Open: func(ctx context.Context, p string) (io.ReadCloser, error) { return d.ReadFiles(ctx, task.ID, p) }}
	ctx := ctxT(t, 30*time.Second)

	store := putStore{}
	c := &stepio.Collector{Store: store, TmpDir: t.TempDir()}
	res := c.Collect(ctx, &v4.StepIO{Parameters: []v4.StepParameter{{Name: "p", Path: "/out/p"}}, Result: true,
		Artifacts: []v4.StepOutputArtifact{{Name: "dir", Path: "/out/dir"}}, LogsKey: "l"}, src, func(ctx context.Context, stdout bool) (io.ReadCloser, error) {
		o := driver.LogOptions{}
		if stdout {
			o.Stream = driver.StreamStdout
		}
		return d.Logs(ctx, task.ID, o)
	}, 0)
	if res.Error != "" || len(res.Parameters) != 1 || *res.Parameters[0].Value != "inline" || *res.Result != "done\n" {
		t.Fatalf("result %+v", res)
	}
	back, dir := openTemp(t)
	if err := stepio.Place(back, "dir", bytes.NewReader(store["dir"]), 0, stepio.DefaultLimits); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "dir", "w.bin")); err != nil || string(b) != "weights" {
		t.Errorf("artifact: %q, %v", b, err)
	}
	for _, p := range []string{"/leak", "/leak2", "/leak/", secret} {
		v, ok, err := stepio.ReadParameter(ctx, src, p, 1000)
		if strings.Contains(v, "secret") {
			t.Fatalf("%s read the node's file", p)
		}
		if ok && err == nil {
			t.Errorf("%s: read %q", p, v)
		}
	}
	if _, err := d.ReadFiles(ctx, task.ID, "/nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing path: %v", err)
	}
}

func openTemp(t *testing.T) (*os.Root, string) {
	dir := t.TempDir()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, dir
}
