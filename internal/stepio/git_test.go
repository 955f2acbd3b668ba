package stepio

import (
	"context"
	"errors"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// gitServer serves a repository with one commit on branch main over git's smart HTTP
// (git http-backend as CGI) on loopback; it skips without git.
func gitServer(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git binary")
	}
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skip("git --exec-path:", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	root := t.TempDir()
	work := filepath.Join(root, "work")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", work},
		{"-C", work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "first"},
		{"clone", "-q", "--bare", work, filepath.Join(root, "repo.git")},
	} {
		if args[0] == "-C" {
			if err := os.WriteFile(filepath.Join(work, "hello.txt"), []byte("hello from git\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("git", "-C", work, "add", "hello.txt").CombinedOutput(); err != nil {
				t.Fatalf("git add: %v: %s", err, out)
			}
		}
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/repo.git"
}

func TestCloneGit(t *testing.T) {
	repo := gitServer(t)
	ctx := context.Background()
	allowed := testPolicy("127.0.0.0/8")
	allowed.GitProtocols = []string{"http"}

	dir := filepath.Join(t.TempDir(), "clone")
	if err := allowed.CloneGit(ctx, &v4.WfGitArtifact{Repo: repo, Revision: "main", Depth: 1}, dir, DefaultLimits); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "hello.txt")); err != nil || string(b) != "hello from git\n" {
		t.Fatalf("cloned file: %q, %v", b, err)
	}

	for _, tc := range []struct {
		name   string
		policy *Policy
		g      v4.WfGitArtifact
		want   string
	}{
		{"loopback refused by default", &Policy{GitProtocols: []string{"http"}}, v4.WfGitArtifact{Repo: repo}, "refused"},
		{"http not allowed", testPolicy("127.0.0.0/8"), v4.WfGitArtifact{Repo: repo}, "transport is not allowed"},
		{"git protocol not allowed", allowed, v4.WfGitArtifact{Repo: "git://127.0.0.1/repo.git"}, "transport is not allowed"},
		{"ssh not allowed", allowed, v4.WfGitArtifact{Repo: "ssh://git@127.0.0.1/repo.git"}, "transport is not allowed"},
		{"file", allowed, v4.WfGitArtifact{Repo: "file:///etc"}, "not a URL with a host"},
		{"ext", allowed, v4.WfGitArtifact{Repo: "ext::sh -c id"}, "not a URL with a host"},
		{"option revision", allowed, v4.WfGitArtifact{Repo: repo, Revision: "--upload-pack=id"}, "not a revision"},
		{"unknown revision", allowed, v4.WfGitArtifact{Repo: repo, Revision: "nope"}, "git fetch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.policy.CloneGit(ctx, &tc.g, filepath.Join(t.TempDir(), "c"), DefaultLimits)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestCloneGitWithoutGit(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := testPolicy().CloneGit(context.Background(), &v4.WfGitArtifact{Repo: "https://example.com/r.git"}, t.TempDir()+"/c", DefaultLimits)
	if !errors.Is(err, ErrNoGit) {
		t.Fatalf("got %v, want ErrNoGit", err)
	}
}

// TestCloneGitBounds: what a clone downloads, and the tree it checks out, are bounded
// (the node's disk is not a namespace's): past a bound nothing is checked out.
func TestCloneGitBounds(t *testing.T) {
	repo := gitServer(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		maxFetch int64
		lim      Limits
		want     string
	}{
		{"download", 100, DefaultLimits, "more than 100 bytes fetched"},
		{"tree bytes", 0, Limits{Bytes: 5, Entries: 10}, "more than 5 bytes"},
		{"tree entries", 0, Limits{Bytes: 1 << 20, Entries: 0}, "more than 0 entries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPolicy("127.0.0.0/8")
			p.GitProtocols = []string{"http"}
			p.MaxFetchBytes = tc.maxFetch
			dir := filepath.Join(t.TempDir(), "c")
			err := p.CloneGit(ctx, &v4.WfGitArtifact{Repo: repo}, dir, tc.lim)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "hello.txt")); err == nil {
				t.Error("checked out past the bound")
			}
		})
	}
}
