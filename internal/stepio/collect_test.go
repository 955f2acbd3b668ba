package stepio

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// memStore is a Store in memory.
type memStore struct {
	mu     sync.Mutex
	inputs map[string][]byte
	put    map[string][]byte
}

func (m *memStore) Get(_ context.Context, input string) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.inputs[input]
	if !ok {
		return nil, fmt.Errorf("input %s: %w", input, fs.ErrNotExist)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (m *memStore) Put(_ context.Context, name string, body io.ReadSeeker, size int64) (v4.StoredArtifact, error) {
	b, err := io.ReadAll(body)
	if err != nil {
		return v4.StoredArtifact{}, err
	}
	if int64(len(b)) != size {
		return v4.StoredArtifact{}, fmt.Errorf("size %d, body %d", size, len(b))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.put == nil {
		m.put = map[string][]byte{}
	}
	m.put[name] = b
	return v4.StoredArtifact{Name: name, Key: "k/" + name, Size: size}, nil
}

// TestRootSourceEscapes: links the task planted where an output is read (out ->
// /etc/shadow, out -> /proc/1/root/...) are not followed out of the work dir; a link
// inside a collected directory is archived as a link.
func TestRootSourceEscapes(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(secret, []byte("root:secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	root, dir := openRoot(t)
	ctx := context.Background()
	for _, link := range []string{secret, "/proc/1/root" + secret, "../../../../../.." + secret, "/proc/self/root" + secret} {
		os.Remove(filepath.Join(dir, "out"))
		if err := os.Symlink(link, filepath.Join(dir, "out")); err != nil {
			t.Fatal(err)
		}
		v, _, err := ReadParameter(ctx, RootSource{Root: root}, "/out", 1000)
		if err == nil || strings.Contains(v, "secret") {
			t.Errorf("parameter through %s: %q, %v", link, v, err)
		}
		var buf bytes.Buffer
		if _, _, err := Archive(ctx, RootSource{Root: root}, "/out", &buf, 1<<20); err == nil {
			t.Errorf("artifact through %s: archived", link)
		}
	}
	// A directory with a link to a secret inside: the link is kept, not its target.
	os.Remove(filepath.Join(dir, "out"))
	os.MkdirAll(filepath.Join(dir, "out"), 0o755)
	os.Symlink(secret, filepath.Join(dir, "out", "s"))
	os.WriteFile(filepath.Join(dir, "out", "f"), []byte("F"), 0o644)
	var buf bytes.Buffer
	if _, _, err := Archive(ctx, RootSource{Root: root}, "out", &buf, 1<<20); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(gunzip(t, buf.Bytes()), []byte("root:secret")) {
		t.Fatal("the archive holds the link's target")
	}
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(&out, zr)
	return out.Bytes()
}

func TestCollect(t *testing.T) {
	root, dir := openRoot(t)
	os.WriteFile(filepath.Join(dir, "model"), []byte("resnet"), 0o644)
	os.WriteFile(filepath.Join(dir, "big"), bytes.Repeat([]byte("x"), v4.MaxStepParameterBytes+1), 0o644)
	os.MkdirAll(filepath.Join(dir, "out", "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "out", "sub", "w.bin"), []byte("weights"), 0o644)
	stdout := "line1\nline2\n"
	logs := func(_ context.Context, onlyStdout bool) (io.ReadCloser, error) {
		if onlyStdout {
			return io.NopCloser(strings.NewReader(stdout)), nil
		}
		return io.NopCloser(strings.NewReader(stdout + "err\n")), nil
	}
	def := "d"
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		step v4.StepIO
		err  string
	}{
		{"everything", v4.StepIO{Main: "m", Parameters: []v4.StepParameter{{Name: "model", Path: "/model"}, {Name: "opt", Path: "/nope", Default: &def}},
			Result: true, StdoutParameter: "out", Artifacts: []v4.StepOutputArtifact{{Name: "w", Path: "/out", Key: "k"}, {Name: "o", Path: "/none", Optional: true}},
			LogsKey: "logs"}, ""},
		{"missing parameter", v4.StepIO{Parameters: []v4.StepParameter{{Name: "p", Path: "/nope"}}, LogsKey: "l"}, "output parameter p: /nope does not exist"},
		{"parameter too long", v4.StepIO{Parameters: []v4.StepParameter{{Name: "p", Path: "/big"}}}, "output parameter p: /big: 262145 bytes, more than 262144"},
		{"parameter is a directory", v4.StepIO{Parameters: []v4.StepParameter{{Name: "p", Path: "/out"}}}, "not a regular file"},
		{"missing artifact", v4.StepIO{Artifacts: []v4.StepOutputArtifact{{Name: "a", Path: "/none"}}}, "output artifact a: /none does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &memStore{}
			c := &Collector{Store: store, TmpDir: t.TempDir()}
			res := c.Collect(ctx, &tc.step, RootSource{Root: root}, logs, 3)
			if !res.Collected || res.ExitCode != 3 {
				t.Fatalf("result %+v", res)
			}
			if tc.err != "" {
				if !strings.Contains(res.Error, tc.err) {
					t.Fatalf("error %q, want %q", res.Error, tc.err)
				}
				if tc.step.LogsKey != "" && res.Logs == nil {
					t.Error("the log is not stored after a failure")
				}
				return
			}
			if res.Error != "" {
				t.Fatal(res.Error)
			}
			got := map[string]string{}
			for _, p := range res.Parameters {
				got[p.Name] = *p.Value
			}
			if got["model"] != "resnet" || got["opt"] != "d" || got["out"] != stdout || *res.Result != stdout {
				t.Errorf("parameters %v, result %q", got, *res.Result)
			}
			if len(res.Artifacts) != 1 || res.Logs == nil || string(store.put[LogsArtifact]) != stdout+"err\n" {
				t.Fatalf("artifacts %+v, logs %+v", res.Artifacts, res.Logs)
			}
			// The stored artifact stages back as the directory it was.
			in, indir := openRoot(t)
			if err := Place(in, "/data", bytes.NewReader(store.put["w"]), 0, DefaultLimits); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(filepath.Join(indir, "data", "sub", "w.bin")); err != nil || string(b) != "weights" {
				t.Errorf("staged back: %q, %v", b, err)
			}
		})
	}
}

func TestCollectBounds(t *testing.T) {
	root, dir := openRoot(t)
	// Random content does not compress below the bound.
	b := make([]byte, 64<<10)
	rand.Read(b)
	os.WriteFile(filepath.Join(dir, "blob"), b, 0o644)
	long := strings.Repeat("y", v4.MaxStepParameterBytes+10)
	logs := func(context.Context, bool) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(long)), nil }
	ctx := context.Background()

	c := &Collector{Store: &memStore{}, TmpDir: t.TempDir(), MaxArtifactBytes: 1000}
	res := c.Collect(ctx, &v4.StepIO{Artifacts: []v4.StepOutputArtifact{{Name: "a", Path: "/blob"}}}, RootSource{Root: root}, logs, 0)
	if !strings.Contains(res.Error, "more than 1000 bytes compressed") {
		t.Errorf("artifact over its bound: %q", res.Error)
	}
	// The result keeps the last bytes; a stdout parameter needs it whole.
	res = c.Collect(ctx, &v4.StepIO{Result: true}, RootSource{Root: root}, logs, 0)
	if res.Error != "" || len(*res.Result) != v4.MaxStepParameterBytes {
		t.Errorf("result: %d bytes, %q", len(*res.Result), res.Error)
	}
	res = c.Collect(ctx, &v4.StepIO{StdoutParameter: "p"}, RootSource{Root: root}, logs, 0)
	if !strings.Contains(res.Error, "output parameter p: standard output is more than") {
		t.Errorf("stdout parameter: %q", res.Error)
	}
}

func TestTarSource(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "p", Typeflag: tar.TypeReg, Size: 3, Mode: 0o644})
	tw.Write([]byte("abc"))
	tw.Close()
	src := TarSource{Open: func(_ context.Context, p string) (io.ReadCloser, error) {
		if p != "/p" {
			return nil, fs.ErrNotExist
		}
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	}}
	v, ok, err := ReadParameter(context.Background(), src, "/p", 10)
	if v != "abc" || !ok || err != nil {
		t.Fatalf("%q %v %v", v, ok, err)
	}
	if _, ok, err := ReadParameter(context.Background(), src, "/q", 10); ok || err != nil {
		t.Fatalf("missing: %v %v", ok, err)
	}
}

// TestRootSourceForeignHardLink: where fs.protected_hardlinks is 0, a task's user may
// hard-link any file of the work dir's filesystem (/etc/shadow) into its work dir; the
// agent, root, must not read it for the task. A hard link to a file of another owner
// than the work dir's is refused; the task's own hard links are read.
func TestRootSourceForeignHardLink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files to other users")
	}
	parent := t.TempDir()
	secret := filepath.Join(parent, "shadow")
	own := filepath.Join(parent, "own")
	dir := filepath.Join(parent, "work")
	for _, f := range []struct {
		path string
		uid  int
	}{{secret, 0}, {own, 4242}} {
		if err := os.WriteFile(f.path, []byte("root:secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(f.path, f.uid, f.uid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	for _, l := range [][2]string{{secret, "out"}, {secret, "d/s"}, {own, "mine"}} {
		os.MkdirAll(filepath.Join(dir, "d"), 0o755)
		if err := os.Link(l[0], filepath.Join(dir, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	ctx := context.Background()
	if v, _, err := ReadParameter(ctx, RootSource{Root: root}, "/out", 1000); err == nil || strings.Contains(v, "secret") {
		t.Errorf("parameter through a hard link: %q, %v", v, err)
	}
	var buf bytes.Buffer
	if _, _, err := Archive(ctx, RootSource{Root: root}, "d", &buf, 1<<20); err == nil {
		t.Error("a directory with a hard link to another user's file: archived")
	}
	if v, ok, err := ReadParameter(ctx, RootSource{Root: root}, "mine", 1000); err != nil || !ok || v != "root:secret" {
		t.Errorf("the task's own hard link: %q, %v, %v", v, ok, err)
	}
}
