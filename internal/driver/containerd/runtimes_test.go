package containerd

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/driver"
)

// executable writes an executable file (or a plain one) in dir.
func executable(t *testing.T, dir, name string, exec bool) string {
	t.Helper()
	mode := os.FileMode(0o644)
	if exec {
		mode = 0o755
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// The operator's table: each binary must exist and be executable, a shim's binary must
// be in PATH, names are handler names, and nothing is declared twice.
func TestParseHandlers(t *testing.T) {
	dir := t.TempDir()
	crun := executable(t, dir, "crun", true)
	plain := executable(t, dir, "plain", false)
	executable(t, dir, "containerd-shim-runsc-v1", true)
	t.Setenv("PATH", dir)
	good, err := ParseHandlers([]string{"crun=" + crun, "mine=crun", "runsc=shim:io.containerd.runsc.v1"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Handler{"crun": {Binary: crun}, "mine": {Binary: crun}, "runsc": {Shim: "io.containerd.runsc.v1"}}
	for name, h := range want {
		if good[name] != h {
			t.Errorf("%s: %+v, want %+v", name, good[name], h)
		}
	}
	if len(good) != len(want) || good["runsc"].String() != "shim:io.containerd.runsc.v1" {
		t.Errorf("table %v", good)
	}
	for _, tc := range []struct{ entry, msg string }{
		{"crun", "want NAME=BINARY"},
		{"crun=", "want NAME=BINARY"},
		{"../x=" + crun, "not a path"},
		{"/bin/sh=" + crun, "not a path"},
		{"Kata=" + crun, "lowercase"},
		{"x=rel/crun", "absolute path"},
		{"x=" + filepath.Join(dir, "missing"), "missing"},
		{"x=" + plain, "permission denied"},
		{"x=" + dir, "x: binary"},
		{"x=nosuch", "not found"},
		{"kata=shim:io.containerd.kata.v2", "containerd-shim-kata-v2 is not in PATH"},
		{"kata=shim:/bin/sh", "want a containerd runtime type"},
		{"kata=shim:io.containerd.../x.v1", "want a containerd runtime type"},
	} {
		if _, err := ParseHandlers([]string{tc.entry}); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%q: %v, want ...%s...", tc.entry, err, tc.msg)
		}
	}
	if _, err := ParseHandlers([]string{"c=" + crun, "c=" + crun}); err == nil || !strings.Contains(err.Error(), "declared twice") {
		t.Errorf("twice: %v", err)
	}
}

// A pod's runtime is only ever a key of the table: a name the node lacks, or one that
// looks like a path, fails the start before containerd is asked anything.
func TestHandlerLookup(t *testing.T) {
	dir := t.TempDir()
	crun := executable(t, dir, "crun", true)
	d, err := New(Config{Address: filepath.Join(dir, "none.sock"), DataDir: dir, Runtimes: map[string]Handler{"crun": {Binary: crun}}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got := d.Runtimes(); !slices.Equal(got, []string{"crun", "runc"}) || d.DefaultRuntime() != "runc" {
		t.Fatalf("runtimes %v, default %s", got, d.DefaultRuntime())
	}
	if name, h, err := d.handler(""); err != nil || name != "runc" || h.Binary != "runc" {
		t.Errorf("default: %s %+v %v", name, h, err)
	}
	wantCrun := crun
	if CrunRefuses() != "" { // run through its wrapper (crun_hybrid.go)
		wantCrun = filepath.Join(dir, "bin", crunWrapperName+"-"+shortHash(crun))
	}
	if name, h, err := d.handler("crun"); err != nil || name != "crun" || h.Binary != wantCrun {
		t.Errorf("crun: %s %+v %v", name, h, err)
	}
	for _, rt := range []string{"kata", "/bin/sh", "../x", crun, "runc "} {
		tk := task(t, "c", "true")
		tk.Setup.Runtime = rt
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := d.Start(ctx, tk)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "this node does not offer it (it offers crun, runc)") {
			t.Errorf("runtime %q: %v", rt, err)
		}
	}
	for _, cfg := range []Config{
		{DefaultRuntime: "kata"},
		{Runtimes: map[string]Handler{"../x": {Binary: crun}}},
		{Runtimes: map[string]Handler{"x": {}}},
		{Runtimes: map[string]Handler{"x": {Binary: crun, Shim: "io.containerd.runsc.v1"}}},
	} {
		cfg.DataDir, cfg.Address = t.TempDir(), filepath.Join(dir, "none.sock")
		if d, err := New(cfg); err == nil {
			d.Close()
			t.Errorf("%+v: accepted", cfg)
		}
	}
}

// A task runs with the runtime its pod names: runc named explicitly, and crun (through
// its wrapper on a hybrid cgroup v1/v2 host), with the pod's limits in its cgroups.
func TestTaskRuntime(t *testing.T) {
	for _, rt := range []string{"runc", "crun"} {
		t.Run(rt, func(t *testing.T) {
			hs := DefaultHandlers()
			if _, ok := hs[rt]; !ok {
				t.Skipf("%s is not installed", rt)
			}
			// crun is the default, so runc runs only because the pod names it.
			d, _ := newDriver(t, func(c *Config) { c.Runtimes, c.RuntimeBinary = hs, "crun" })
			tk := task(t, "rt", "echo ran; grep :memory: /proc/self/cgroup; sleep 2; exit 3")
			tk.RunToEnd = true
			tk.Setup.Runtime = rt
			tk.MemoryLimit = 48
			start(t, d, tk)
			if limit := memoryLimitOf(t, d, tk.ID); limit != "50331648" {
				t.Errorf("the task's memory cgroup limit is %q, want 48 MiB", limit)
			}
			if st := waitEnd(t, d, tk.ID); st.Info.ExitCode != 3 {
				t.Fatalf("ended as %+v, want exit code 3", st.Info)
			}
			if st, _ := d.Inspect(context.Background(), tk.ID); st.Labels[labelRuntime] != rt {
				t.Fatalf("runtime label %q", st.Labels[labelRuntime])
			}
			if got := logs(t, d, tk.ID, driver.LogOptions{}); !strings.HasPrefix(got, "ran\n") {
				t.Fatalf("log %q", got)
			}
		})
	}
}

// memoryLimitOf reads, on the host, the memory limit of the cgroup the running task id
// printed (its /proc/self/cgroup line "N:memory:/path").
func memoryLimitOf(t *testing.T, d *Driver, id string) string {
	t.Helper()
	for range 40 { // 40 × 50 ms: the task prints its cgroup at once
		for line := range strings.SplitSeq(logs(t, d, id, driver.LogOptions{}), "\n") {
			if _, path, ok := strings.Cut(line, ":memory:"); ok {
				b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes"))
				if err != nil {
					t.Fatalf("the task's memory cgroup: %v", err)
				}
				return strings.TrimSpace(string(b))
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the task did not print its memory cgroup")
	return ""
}
