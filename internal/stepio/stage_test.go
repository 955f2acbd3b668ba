package stepio

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestStage(t *testing.T) {
	repo := gitServer(t)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("web")) }))
	defer web.Close()
	p := testPolicy("127.0.0.0/8")
	p.GitProtocols = []string{"http"}
	s := &Stager{Policy: p, Store: &memStore{inputs: map[string][]byte{"plain": []byte("stored")}}, TmpDir: t.TempDir()}
	root, dir := openRoot(t)
	raw := "#!/bin/sh\n"
	ctx := context.Background()
	for _, in := range []v4.StepInput{
		{Name: "src", Path: "/src", Git: &v4.WfGitArtifact{Repo: repo, Depth: 1}},
		{Name: "script", Path: "/bin/run", Raw: &raw, Mode: 0o755},
		{Name: "web", Path: "web.txt", HTTP: &v4.WfHTTPArtifact{URL: web.URL}},
		{Name: "plain", Path: "/data/plain", Key: "k"},
		{Name: "gone", Path: "/data/gone", Key: "k", Optional: true},
	} {
		if err := s.Stage(ctx, in, root, in.Path); err != nil {
			t.Fatalf("input %s: %v", in.Name, err)
		}
	}
	for name, want := range map[string]string{"src/hello.txt": "hello from git\n", "bin/run": raw, "web.txt": "web", "data/plain": "stored"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v", name, b, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "bin/run")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("mode of bin/run: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data/gone")); err == nil {
		t.Error("a missing optional input was written")
	}
	if err := s.Stage(ctx, v4.StepInput{Name: "need", Path: "/x", Key: "k"}, root, "/x"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing input: %v", err)
	}
	if ents, _ := os.ReadDir(s.TmpDir); len(ents) != 0 {
		t.Errorf("clones left in the temporary dir: %v", ents)
	}
}

// stallStore's inputs never send a byte: a server or S3 store that hangs mid-stream.
type stallStore struct{ memStore }

func (*stallStore) Get(ctx context.Context, _ string) (io.ReadCloser, error) {
	return io.NopCloser(ctxReader{ctx}), nil
}

type ctxReader struct{ ctx context.Context }

func (r ctxReader) Read([]byte) (int, error) {
	<-r.ctx.Done()
	return 0, r.ctx.Err()
}

// A repository input that stalls ends at the stager's timeout, not never.
func TestStageRepositoryInputTimeout(t *testing.T) {
	s := &Stager{Policy: testPolicy(), Store: &stallStore{}, TmpDir: t.TempDir(), Timeout: 50 * time.Millisecond}
	root, _ := openRoot(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Stage(ctx, v4.StepInput{Name: "in", Path: "/in", Key: "k"}, root, "/in") }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "deadline") {
			t.Fatalf("got %v, want a deadline error", err)
		}
	case <-time.After(20 * time.Second):
		cancel()
		<-done
		t.Fatal("a stalled repository input was still staging after 20s")
	}
}
