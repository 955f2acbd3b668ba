package agent

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver/fake"
	"github.com/berthhq/berth/internal/executor"
)

// requireRoot skips a test that runs processes as another user, or fails it where CI
// says root is there (BERTH_REQUIRE_CGROUPS=1), since skipping would hide a failure.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("BERTH_REQUIRE_CGROUPS") == "1" {
		t.Fatal("this test needs root (it runs a process as nobody) and BERTH_REQUIRE_CGROUPS=1 is set")
	}
	t.Skip("needs root to run a process as nobody (set BERTH_REQUIRE_CGROUPS=1 to fail instead)")
}

// openTempParents makes the directories above dir up to the system's temp dir passable
// by other users, as /var/lib is: t.TempDir makes them 0700.
func openTempParents(t *testing.T, dir string) {
	t.Helper()
	for p := dir; p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o711); err != nil {
			t.Fatal(err)
		}
	}
}

// exposed lists what under root a user other than the owners (and not in their groups)
// can list or read, given that they can reach root: a directory with o+r, a file with o+r,
// in directories that all have o+x.
func exposed(t *testing.T, root string) []string {
	t.Helper()
	reachable := map[string]bool{}
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root && !reachable[filepath.Dir(p)] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		perm := fi.Mode().Perm()
		if d.Type()&fs.ModeSymlink == 0 && perm&0o004 != 0 {
			out = append(out, p+" "+perm.String())
		}
		if d.IsDir() {
			reachable[p] = perm&0o001 != 0
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A process task with user nobody runs with the real process driver on an agent whose
// data dir an earlier version made 0700: it reaches its work dir, reads its secret file
// and env, writes ${workPath}/..., and nothing of the data dir (checkpoint, the driver's
// state with the secret env, the secret file, the log) can be listed or read by others.
func TestRealProcessAsNobody(t *testing.T) {
	requireRoot(t)
	c := newCluster(t)
	base := t.TempDir()
	openTempParents(t, base)
	dir := filepath.Join(base, "agent")
	if err := os.Mkdir(dir, 0o700); err != nil { // as an earlier agent left it
		t.Fatal(err)
	}
	createDBSecret(t)
	startAgent(t, c, dir, fake.New("unused"), func(cfg *Config) {
		cfg.Drivers = nil // the real process driver under dir/process
		cfg.Docker = DockerOff
		cfg.CgroupParent = "berth-agent-test"
		cfg.TaskUsers = []string{"nobody"}
	})
	const name = "0.web.ns-a.nobody.1"
	tg := processTG(name)
	tg.Spec.Template.Spec.Processes[0] = v4.ProcessTask{ProcName: "sleep", User: "nobody", StartGracePeriod: 1,
		StartCmd: `cat ${workPath}/db.pass > ${workPath}/copy.txt || exit 3
echo "$DB_PASS" > ${workPath}/env.txt || exit 4
exec sleep 120`,
		Secrets: []v4.SecretRef{{SecretName: "db", Items: []v4.SecretItem{
			{Type: v4.InjectFile, DataKey: "pass", KeyOrPath: "${workPath}/db.pass", ReadOnly: true},
			{Type: v4.InjectEnv, DataKey: "pass", KeyOrPath: "DB_PASS"},
		}}},
	}
	createTG(t, tg)
	waitFor(t, name+" running or failed", func() bool {
		got, err := tgs().Get(context.Background(), testNS, name)
		if err == nil && v4.Terminal(got.Status.Phase) {
			t.Fatalf("the task group ended: %s %q", got.Status.Phase, got.Status.Message)
		}
		return err == nil && got.Status.Phase == v4.StatusRunning
	})
	pid := waitPhase(t, name, v4.StatusRunning).Status.Tasks[0].Info.Pid
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })

	work := filepath.Join(executor.PodDir(dir, testNS, name), "work")
	for _, f := range []string{"copy.txt", "env.txt"} {
		if b, err := os.ReadFile(filepath.Join(work, f)); err != nil || strings.TrimSpace(string(b)) != "hunter2" {
			t.Errorf("%s: %q, %v; want the secret as the process read it", f, b, err)
		}
	}
	nobodyUID := fileOwner(t, filepath.Join(work, "copy.txt"))
	for path, want := range map[string]os.FileMode{dir: dataDirMode, work: 0o700, filepath.Join(work, "db.pass"): 0o400} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %v", path, fi, err, want)
		}
	}
	if fileOwner(t, filepath.Join(work, "db.pass")) != nobodyUID {
		t.Error("the secret file does not belong to the task's user")
	}
	if got := exposed(t, dir); len(got) > 0 {
		t.Errorf("other users can list or read in the data dir:\n%s", strings.Join(got, "\n"))
	}

	if _, err := testStore.Delete(context.Background(), v4.KindTaskGroup, testNS, name, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the process to be killed", func() bool { return syscall.Kill(pid, 0) != nil || isZombie(pid) })
}

func fileOwner(t *testing.T, path string) uint32 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Uid
}

func TestClosedAncestor(t *testing.T) {
	base := t.TempDir()
	openTempParents(t, base)
	tests := []struct {
		name       string
		modes      []os.FileMode // of base/a, base/a/b, base/a/b/c
		wantClosed string        // relative to base, "" for none
	}{
		{"all passable", []os.FileMode{0o711, 0o755, 0o711}, ""},
		{"a 0700 directory above", []os.FileMode{0o755, 0o700, 0o711}, "a/b"},
		{"the data dir's own mode does not count", []os.FileMode{0o755, 0o755, 0o700}, ""},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(base, string(rune('0'+i)))
			dirs := []string{filepath.Join(root, "a"), filepath.Join(root, "a", "b"), filepath.Join(root, "a", "b", "c")}
			if err := os.MkdirAll(dirs[2], 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(root, 0o711); err != nil {
				t.Fatal(err)
			}
			for j, d := range dirs {
				if err := os.Chmod(d, tc.modes[j]); err != nil {
					t.Fatal(err)
				}
			}
			want := ""
			if tc.wantClosed != "" {
				want = filepath.Join(root, tc.wantClosed)
			}
			if got := closedAncestor(dirs[2]); got != want {
				t.Errorf("closedAncestor = %q, want %q", got, want)
			}
		})
	}
}
