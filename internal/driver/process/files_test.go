package process

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berthhq/berth/internal/driver"
)

// Files under the work dir are written through an os.Root: neither ".." nor a symlink in
// the work dir carries a write out of it; other absolute paths are host files, as in BCS,
// written only in the node's host volumes (docs/spec.md "Configmaps and secrets",
// docs/security.md "Paths").
func TestWriteFilesStayInTheWorkDir(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, work, outside string) // links the task left behind
		path  func(work, outside string) string
		want  string // the file written, relative to the test's top dir; "" for an error
		err   string
	}{
		{"relative", nil, func(_, _ string) string { return "conf/app.conf" }, "work/conf/app.conf", ""},
		{"dot relative", nil, func(_, _ string) string { return "./app.conf" }, "work/app.conf", ""},
		{"absolute in the work dir", nil, func(w, _ string) string { return filepath.Join(w, "conf/app.conf") }, "work/conf/app.conf", ""},
		{"absolute on the host", nil, func(_, o string) string { return filepath.Join(o, "etc/app.conf") }, "outside/etc/app.conf", ""},
		{"link inside the work dir", func(t *testing.T, w, _ string) { mkdirIn(t, w, "real"); symlinkIn(t, "real", w, "conf") },
			func(_, _ string) string { return "conf/app.conf" }, "work/real/app.conf", ""},
		{"last element a link out", func(t *testing.T, w, o string) { symlinkIn(t, filepath.Join(o, "target"), w, "app.conf") },
			func(_, _ string) string { return "app.conf" }, "work/app.conf", ""}, // the link is replaced, its target untouched
		{"dot dot", nil, func(_, _ string) string { return "../outside/app.conf" }, "", "'..' segment"},
		{"dot dot absolute", nil, func(w, _ string) string { return w + "/conf/../../outside/app.conf" }, "", "'..' segment"},
		// Links out point at the test's own outside dir, never at /etc: a regression must
		// not write into the host.
		{"absolute link out", func(t *testing.T, w, o string) { symlinkIn(t, o, w, "conf") },
			func(_, _ string) string { return "conf/cron.d/x" }, "", "escapes"},
		{"relative link out", func(t *testing.T, w, _ string) { symlinkIn(t, "../outside", w, "conf") },
			func(w, _ string) string { return filepath.Join(w, "conf/app.conf") }, "", "escapes"},
		{"deeper link out", func(t *testing.T, w, _ string) { mkdirIn(t, w, "a"); symlinkIn(t, "../../outside", w, "a", "b") },
			func(_, _ string) string { return "a/b/app.conf" }, "", "escapes"},
		{"the work dir itself", nil, func(w, _ string) string { return w + "/" }, "", "not a file in it"},
		{"root", nil, func(_, _ string) string { return "/" }, "", "no task may reach"},
		{"a host path not in the host volumes", nil, func(_, o string) string { return filepath.Join(filepath.Dir(o), "elsewhere", "x") }, "", "outside the pod's directories"},
		{"a protected dir below a host volume", nil, func(_, o string) string { return filepath.Join(o, "keys", "x") }, "", "no task may reach"},
		{"empty", nil, func(_, _ string) string { return "" }, "", "empty path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			top := t.TempDir()
			work, outside := mkdirIn(t, top, "work"), mkdirIn(t, top, "outside")
			if tc.setup != nil {
				tc.setup(t, work, outside)
			}
			sb := sandbox{pod: []string{work}, host: []string{outside}, protected: []string{filepath.Join(outside, "keys")}}
			err := writeFiles([]driver.File{{Path: tc.path(work, outside), Content: []byte("item")}}, work, sb, nil)
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("want an error with %q, got %v", tc.err, err)
				}
				if n := filesUnder(t, outside); n != 0 {
					t.Fatalf("%d files written outside the work dir", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			fi, err := os.Lstat(filepath.Join(top, tc.want))
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
				t.Fatalf("%s: %v %v", tc.want, fi, err)
			}
			if b, _ := os.ReadFile(filepath.Join(top, tc.want)); string(b) != "item" {
				t.Fatalf("%s holds %q", tc.want, b)
			}
			if _, err := os.Stat(filepath.Join(outside, "target")); err == nil {
				t.Fatal("the write followed a link out of the work dir")
			}
		})
	}
}

func mkdirIn(t *testing.T, parts ...string) string {
	t.Helper()
	p := filepath.Join(parts...)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func symlinkIn(t *testing.T, target string, parts ...string) {
	t.Helper()
	if err := os.Symlink(target, filepath.Join(parts...)); err != nil {
		t.Fatal(err)
	}
}

func filesUnder(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
