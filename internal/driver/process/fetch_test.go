package process

import (
	"archive/tar"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// pkgServer serves packages with basic auth (repo / s3cret) and counts requests.
type pkgServer struct {
	*httptest.Server
	mu    sync.Mutex
	files map[string][]byte
	hits  map[string]int
}

func newPkgServer(t *testing.T, files map[string][]byte) *pkgServer {
	s := &pkgServer{files: files, hits: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		body, ok := s.files[r.URL.Path]
		s.mu.Unlock()
		if u, p, _ := r.BasicAuth(); u != "repo" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="pkg"`)
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *pkgServer) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

func TestFetch(t *testing.T) {
	app := []archiveEntry{
		{Name: "gamesvc/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "gamesvc/bin/start.sh", Body: "#!/bin/sh\necho hi\n", Mode: 0o755},
		{Name: "gamesvc/conf/app.conf", Body: "port=1\n", Mode: 0o640},
		{Name: "gamesvc/current", Type: tar.TypeSymlink, Linkname: "bin"},
	}
	srv := newPkgServer(t, map[string][]byte{
		"/p/app.tar.gz": buildTarGz(t, app),
		"/p/app.zip":    buildZip(t, app),
		"/p/tool":       []byte("#!/bin/sh\necho tool\n"),
	})
	cases := []struct {
		name, path, user, pwd string
		wantErr               string // substring; "" for success
		check                 func(t *testing.T, dir string)
	}{
		{name: "tar.gz", path: "/p/app.tar.gz", user: "repo", pwd: "s3cret", check: checkApp},
		{name: "zip", path: "/p/app.zip", user: "repo", pwd: "s3cret", check: checkApp},
		{name: "plain file", path: "/p/tool", user: "repo", pwd: "s3cret", check: func(t *testing.T, dir string) {
			fi, err := os.Stat(filepath.Join(dir, "tool"))
			if err != nil || fi.Mode().Perm()&0o100 == 0 {
				t.Fatalf("tool: %v, %v", fi, err)
			}
		}},
		{name: "401", path: "/p/app.tar.gz", user: "repo", pwd: "wrong", wantErr: "/p/app.tar.gz: 401 Unauthorized"},
		{name: "404", path: "/p/missing.tgz", user: "repo", pwd: "s3cret", wantErr: "/p/missing.tgz: 404 Not Found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newTestDriver(t, "")
			dir := t.TempDir()
			u := v4.URI{Value: srv.URL + tc.path, User: tc.user, Pwd: tc.pwd}
			err := d.fetchAll(context.Background(), []v4.URI{u}, dir, podBox(dir), nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want it to contain %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), tc.pwd) {
					t.Fatalf("error %q shows the password", err)
				}
				if !strings.HasPrefix(err.Error(), "download http://") {
					t.Fatalf("error %q does not name the URL", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, dir)
		})
	}
}

func checkApp(t *testing.T, dir string) {
	t.Helper()
	if got := readFile(t, filepath.Join(dir, "gamesvc/conf/app.conf")); got != "port=1\n" {
		t.Fatalf("app.conf = %q", got)
	}
	for name, want := range map[string]os.FileMode{"gamesvc/bin/start.sh": 0o755, "gamesvc/conf/app.conf": 0o640} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", name, fi.Mode().Perm(), want)
		}
	}
	if l, err := os.Readlink(filepath.Join(dir, "gamesvc/current")); err != nil || l != "bin" {
		t.Errorf("symlink current -> %q, %v", l, err)
	}
}

func TestFetchPullPolicy(t *testing.T) {
	pkg := buildTarGz(t, []archiveEntry{{Name: "a.txt", Body: "a"}})
	srv := newPkgServer(t, map[string][]byte{"/p/a.tgz": pkg, "/p/b.tgz": pkg, "/p/c.tgz": pkg})
	d := newTestDriver(t, "")
	fetch := func(path, policy string) {
		t.Helper()
		u := v4.URI{Value: srv.URL + path, User: "repo", Pwd: "s3cret", PullPolicy: policy}
		dir := t.TempDir()
		if err := d.fetchAll(context.Background(), []v4.URI{u}, dir, podBox(dir), nil); err != nil {
			t.Fatal(err)
		}
	}
	fetch("/p/a.tgz", "IfNotPresent")
	fetch("/p/a.tgz", "IfNotPresent")
	fetch("/p/a.tgz", "")
	if n := srv.count("/p/a.tgz"); n != 1 {
		t.Errorf("IfNotPresent: %d requests, want 1 (cache hit)", n)
	}
	fetch("/p/b.tgz", "Always")
	fetch("/p/b.tgz", "Always")
	if n := srv.count("/p/b.tgz"); n != 2 {
		t.Errorf("Always: %d requests, want 2", n)
	}

	// Concurrent starts of one URL: one download, every unpack whole.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		dir := t.TempDir()
		wg.Go(func() {
			u := v4.URI{Value: srv.URL + "/p/c.tgz", User: "repo", Pwd: "s3cret"}
			if err := d.fetchAll(context.Background(), []v4.URI{u}, dir, podBox(dir), nil); err != nil {
				errs <- err
				return
			}
			if b, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(b) != "a" {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := srv.count("/p/c.tgz"); n != 1 {
		t.Errorf("concurrent IfNotPresent: %d requests, want 1", n)
	}

	local := filepath.Join(t.TempDir(), "local.tgz")
	os.WriteFile(local, pkg, 0o644)
	dir := t.TempDir()
	// A file:// package is read only from a host volume of the node.
	if err := d.fetchAll(context.Background(), []v4.URI{{Value: "file://" + local}}, dir, podBox(dir), nil); err == nil || !strings.Contains(err.Error(), "host volumes") {
		t.Fatalf("file:// package outside the host volumes: %v", err)
	}
	withLocal := sandbox{pod: []string{dir}, host: []string{filepath.Dir(local)}}
	if err := d.fetchAll(context.Background(), []v4.URI{{Value: "file://" + local}}, dir, withLocal, nil); err != nil {
		t.Fatalf("file:// package: %v", err)
	}
	if got := readFile(t, filepath.Join(dir, "a.txt")); got != "a" {
		t.Fatalf("file:// package unpacked %q", got)
	}
	if err := d.fetchAll(context.Background(), []v4.URI{{Value: "file://" + filepath.Join(filepath.Dir(local), "x.tgz")}}, dir, withLocal, nil); err == nil {
		t.Fatal("missing file:// package accepted")
	}

	if err := d.fetchAll(context.Background(), []v4.URI{{Value: srv.URL + "/p/a.tgz", PullPolicy: "Sometimes"}}, dir, podBox(dir), nil); err == nil || !strings.Contains(err.Error(), "pullPolicy") {
		t.Errorf("unknown pullPolicy: %v", err)
	}
}

func TestUnpackRefusesEscapes(t *testing.T) {
	cases := []struct {
		name    string
		entries []archiveEntry
		want    string
	}{
		{"dotdot", []archiveEntry{{Name: "../evil", Body: "x"}}, "escapes"},
		{"nested dotdot", []archiveEntry{{Name: "a/../../evil", Body: "x"}}, "escapes"},
		{"absolute", []archiveEntry{{Name: "/tmp/evil", Body: "x"}}, "escapes"},
		{"symlink out", []archiveEntry{{Name: "link", Type: tar.TypeSymlink, Linkname: "../../etc"}}, "points outside"},
		{"absolute symlink", []archiveEntry{{Name: "link", Type: tar.TypeSymlink, Linkname: "/etc"}}, "points outside"},
	}
	for _, tc := range cases {
		for _, kind := range []string{"tgz", "zip"} {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				base := t.TempDir()
				dest := filepath.Join(base, "out", "dest")
				src := filepath.Join(base, "pkg."+kind)
				var body []byte
				if kind == "zip" {
					body = buildZip(t, tc.entries)
				} else {
					body = buildTarGz(t, tc.entries)
				}
				if err := os.WriteFile(src, body, 0o644); err != nil {
					t.Fatal(err)
				}
				err := unpackFile(t, src, dest)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("unpack: %v, want an error containing %q", err, tc.want)
				}
				for _, p := range []string{filepath.Join(base, "out", "evil"), filepath.Join(base, "evil")} {
					if _, err := os.Lstat(p); err == nil {
						t.Fatalf("%s was written", p)
					}
				}
			})
		}
	}

	// A symlink already in the output dir must not lead a later write outside.
	base := t.TempDir()
	dest := filepath.Join(base, "dest")
	os.MkdirAll(dest, 0o755)
	os.Symlink(base, filepath.Join(dest, "up"))
	src := filepath.Join(base, "pkg.tgz")
	os.WriteFile(src, buildTarGz(t, []archiveEntry{{Name: "up/evil", Body: "x"}}), 0o644)
	if err := unpackFile(t, src, dest); err == nil {
		t.Fatal("write through a symlink to outside succeeded")
	}
	if _, err := os.Lstat(filepath.Join(base, "evil")); err == nil {
		t.Fatal("evil was written outside")
	}
}

// unpackFile unpacks the package file src into dest, created when missing.
func unpackFile(t *testing.T, src, dest string) error {
	t.Helper()
	if err := os.MkdirAll(dest, 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dest)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return unpack(f, filepath.Base(src), root, nil)
}

// podBox is a sandbox of the given pod directories and no host volumes.
func podBox(dirs ...string) sandbox { return sandbox{pod: dirs} }
