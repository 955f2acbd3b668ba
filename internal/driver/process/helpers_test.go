package process

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

const testCgroupParent = "berth-test"

// requireCgroups skips a test that needs root and cgroups, or fails it where CI says they
// must be there (BERTH_REQUIRE_CGROUPS=1).
func requireCgroups(t *testing.T) {
	t.Helper()
	why := ""
	switch {
	case os.Geteuid() != 0:
		why = "needs root"
	case detectCgroups() == cgroupNone:
		why = "needs a cgroup filesystem"
	}
	if why == "" {
		return
	}
	if os.Getenv("BERTH_REQUIRE_CGROUPS") == "1" {
		t.Fatalf("%s, and BERTH_REQUIRE_CGROUPS=1", why)
	}
	t.Skipf("%s (set BERTH_REQUIRE_CGROUPS=1 to fail instead)", why)
}

// parallelTestDriver is how most tests begin: they need cgroups, run in parallel, and
// use a driver of their own on a temporary data dir.
func parallelTestDriver(t *testing.T) *Driver {
	t.Helper()
	requireCgroups(t)
	t.Parallel()
	return newTestDriver(t, "")
}

func newTestDriver(t *testing.T, dataDir string) *Driver {
	t.Helper()
	return newTestDriverWith(t, Config{DataDir: dataDir})
}

// newTestDriverWith is newTestDriver with more of the config (DataDir "": a temp dir).
func newTestDriverWith(t testing.TB, cfg Config) *Driver {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	cfg.CgroupParent = testCgroupParent
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Nothing a test started may outlive it.
		ctx := context.Background()
		states, _ := d.List(ctx)
		for _, st := range states {
			d.Stop(ctx, st.ID, time.Millisecond)
			d.Remove(ctx, st.ID)
		}
		d.Close()
	})
	return d
}

// testTask returns a task whose pod directories lie in a fresh temp dir.
func testTask(t testing.TB, id string, p *v4.ProcessTask) *driver.Task {
	t.Helper()
	base := t.TempDir()
	task := &driver.Task{
		ID:          id,
		Name:        p.ProcName,
		Labels:      map[string]string{driver.LabelTask: p.ProcName, driver.LabelTaskGroup: "ns/" + id},
		Process:     p,
		WorkBaseDir: filepath.Join(base, "work"),
		RunBaseDir:  filepath.Join(base, "run"),
		LogDir:      filepath.Join(base, "logs"),
		KillGrace:   time.Second,
	}
	for _, dir := range []string{task.WorkBaseDir, task.RunBaseDir, task.LogDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return task
}

func mustStart(t *testing.T, d *Driver, task *driver.Task) driver.State {
	t.Helper()
	st, err := d.Start(context.Background(), task)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if !st.Running || st.Info.Pid <= 0 {
		t.Fatalf("Start returned %+v", st)
	}
	return st
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// testUser returns a non-root user, created with useradd if needed; it skips when that
// is not possible.
func testUser(t *testing.T) *credential {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch users")
	}
	const name = "berthtest"
	if c, err := lookupUser(name); err == nil {
		return c
	}
	if out, err := exec.Command("useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name).CombinedOutput(); err != nil {
		t.Skipf("cannot create a test user: %v: %s", err, out)
	}
	c, err := lookupUser(name)
	if err != nil {
		t.Skip(err)
	}
	return c
}

// cgroupProcs lists the processes left in the task's cgroup.
func cgroupProcs(t *testing.T, d *Driver, id string) []int {
	t.Helper()
	st, err := d.load(id)
	if err != nil {
		t.Fatal(err)
	}
	cg := d.loadCgroup(st)
	if cg == nil {
		t.Fatalf("task %s has no cgroup", id)
	}
	pids, err := cg.Procs()
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

type archiveEntry struct {
	Name     string
	Body     string
	Mode     int64
	Type     byte // tar type; 0 regular
	Linkname string
}

func buildTarGz(t *testing.T, entries []archiveEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Mode: e.Mode, Typeflag: e.Type, Linkname: e.Linkname, Size: int64(len(e.Body))}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			if _, err := tw.Write([]byte(e.Body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func buildZip(t *testing.T, entries []archiveEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.Name, Method: zip.Deflate}
		mode := os.FileMode(e.Mode)
		if mode == 0 {
			mode = 0o644
		}
		if e.Type == tar.TypeSymlink {
			mode |= os.ModeSymlink
			e.Body = e.Linkname
		}
		if strings.HasSuffix(e.Name, "/") {
			mode |= os.ModeDir
		}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(e.Body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readPid reads the pid a pid file holds.
func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %s: %v", path, err)
	}
	return pid
}
