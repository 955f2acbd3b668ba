package containerd

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/stepio"
)

// TestReadFiles reads a step's outputs from an exited container's snapshot: a file, a
// directory as an archive, and links the task made to a node file, which stay unread.
func TestReadFiles(t *testing.T) {
	d, _ := newDriver(t, nil)
	secret := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(secret, []byte("root:secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	stage := t.TempDir()
	os.WriteFile(filepath.Join(stage, "raw"), []byte("inline"), 0o644)
	tk := task(t, "main", "mkdir -p /out/dir && cat /in/raw > /out/p && echo w > /out/dir/w.bin && ln -s "+secret+" /leak && ln -s ../.."+secret+" /leak2")
	tk.Setup.Volumes = []driver.Mount{{HostPath: filepath.Join(stage, "raw"), ContainerPath: "/in/raw"}}
	tk.RunToEnd = true // a step's main task ends at once
	start(t, d, tk)
	if st := waitEnd(t, d, tk.ID); st.Info.ExitCode != 0 {
		t.Fatalf("exit %+v: %s", st.Info, logs(t, d, tk.ID, driver.LogOptions{}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src := stepio.TarSource{Open: func(ctx context.Context, p string) (io.ReadCloser, error) { return d.ReadFiles(ctx, tk.ID, p) }}
	if v, ok, err := stepio.ReadParameter(ctx, src, "/out/p", 100); v != "inline" || !ok || err != nil {
		t.Fatalf("parameter: %q %v %v", v, ok, err)
	}
	var buf strings.Builder
	if _, _, err := stepio.Archive(ctx, src, "/out/dir", &buf, 1<<20); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/leak", "/leak2"} {
		v, _, err := stepio.ReadParameter(ctx, src, p, 100)
		if err == nil || strings.Contains(v, "secret") {
			t.Errorf("%s: %q, %v", p, v, err)
		}
	}
	if _, ok, err := stepio.ReadParameter(ctx, src, "/nope", 100); ok || err != nil {
		t.Errorf("missing: %v %v", ok, err)
	}
	rc, err := d.ReadFiles(ctx, tk.ID, "/nope")
	if err == nil {
		_, err = io.ReadAll(rc)
		rc.Close()
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing path: %v", err)
	}
}
