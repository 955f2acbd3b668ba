package csivolume

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/csi/csitest"
	"github.com/berthhq/berth/internal/mountinfo"
	"github.com/berthhq/berth/internal/retrysweep"
)

// Two pods of the node publish the same volume: it is staged once and published at each
// pod's directory (read-only for a read-only claim), both see the same files, and it is
// unstaged only when the second pod unpublishes. Every call is idempotent.
func TestPublishUnpublish(t *testing.T) {
	requireRoot(t)
	for _, tc := range []struct {
		name  string
		opts  csitest.Options
		stage bool
	}{
		{"stage", csitest.Options{}, true},
		{"no stage", csitest.Options{NoStage: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startPlugin(t, tc.opts)
			e := newEnv(t, p.dir)
			e.plugins.set(csitest.DefaultName, p.client, true)
			e.server.grants["ns/db"] = grant(p.createVolume(t, "db"))
			ctx := context.Background()
			a, b := e.target("ns/a", "data"), e.target("ns/b", "data")
			for range 2 { // the second Publish finds the publication done
				if err := e.m.Publish(ctx, "ns/a", a, "ns", "a", &v4.CSIVolumeSource{Volume: "db"}); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.m.Publish(ctx, "ns/b", b, "ns", "b", &v4.CSIVolumeSource{Volume: "db", ReadOnly: true}); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(a, "f"), []byte("hello"), 0o644); err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(filepath.Join(b, "f")); err != nil || string(got) != "hello" {
				t.Fatalf("read through the second pod: %q, %v", got, err)
			}
			if err := os.WriteFile(filepath.Join(b, "g"), nil, 0o644); !errors.Is(err, syscall.EROFS) {
				t.Errorf("write through the read-only claim: %v, want EROFS", err)
			}
			want := []string{"NodePublishVolume", "NodePublishVolume"}
			if tc.stage {
				want = slices.Insert(want, 0, "NodeStageVolume")
			}
			checkCalls(t, p, want)

			for range 2 { // the second Unpublish finds nothing to do
				if err := e.m.Unpublish(ctx, "ns/a", a); err != nil {
					t.Fatal(err)
				}
			}
			if isMounted(t, a) || !isMounted(t, b) {
				t.Fatalf("after a's unpublish: a mounted %v, b mounted %v", isMounted(t, a), isMounted(t, b))
			}
			if err := e.m.Unpublish(ctx, "ns/b", b); err != nil {
				t.Fatal(err)
			}
			want = append(want, "NodeUnpublishVolume", "NodeUnpublishVolume")
			if tc.stage {
				want = append(want, "NodeUnstageVolume")
			}
			checkCalls(t, p, want)
			checkClean(t, e)
			wantClaims := []string{"claim ns/db a", "claim ns/db b", "release ns/db a", "release ns/db b"}
			if got := e.server.got(); !slices.Equal(got, wantClaims) {
				t.Errorf("server calls %q, want %q", got, wantClaims)
			}
		})
	}
}

// A new manager over the same state (an agent's restart) unpublishes, unstages and
// releases the volumes of the pods that went meanwhile and keeps those of the pods that
// still run; a plugin missing at that time is retried with backoff and reported.
func TestRestartCleansUpGonePods(t *testing.T) {
	requireRoot(t)
	p := startPlugin(t, csitest.Options{})
	e := newEnv(t, p.dir)
	e.plugins.set(csitest.DefaultName, p.client, true)
	e.server.grants["ns/db"] = grant(p.createVolume(t, "db"))
	e.server.grants["ns/logs"] = grant(p.createVolume(t, "logs"))
	ctx := context.Background()
	live, gone, alone := e.target("ns/live", "data"), e.target("ns/gone", "data"), e.target("ns/gone", "logs")
	for _, c := range []struct{ pod, dir, vol string }{{"ns/live", live, "db"}, {"ns/gone", gone, "db"}, {"ns/gone", alone, "logs"}} {
		if err := e.m.Publish(ctx, c.pod, c.dir, "ns", strings.TrimPrefix(c.pod, "ns/"), &v4.CSIVolumeSource{Volume: c.vol}); err != nil {
			t.Fatal(err)
		}
	}

	m := e.restart(t)
	var failures []int
	m.opts.Failed = func(r Record, attempt int, err error) {
		failures = append(failures, attempt)
		if !strings.Contains(err.Error(), "CSI plugin "+csitest.DefaultName+" is not running") {
			t.Errorf("failure of %s: %v", r.Dir, err)
		}
	}
	alive := func(pod string) bool { return pod == "ns/live" }
	e.plugins.set(csitest.DefaultName, nil, false) // the plugin has not come back yet
	now := time0()
	if next := m.Sweep(ctx, alive, now); next.IsZero() || m.Pending() != 2 || !slices.Equal(failures, []int{1, 1}) {
		t.Fatalf("sweep without the plugin: next %v, pending %d, failures %v", next, m.Pending(), failures)
	}
	m.Sweep(ctx, alive, now) // before the retry is due: not tried
	if len(failures) != 2 {
		t.Fatalf("retried before the backoff: %v", failures)
	}
	e.plugins.set(csitest.DefaultName, p.client, true)
	if next := m.Sweep(ctx, alive, now.Add(retrysweep.RetryMin)); !next.IsZero() || m.Pending() != 0 {
		t.Fatalf("sweep with the plugin: next %v, pending %d", next, m.Pending())
	}
	if !isMounted(t, live) || isMounted(t, gone) || isMounted(t, alone) {
		t.Fatalf("mounted: live %v, gone %v %v", isMounted(t, live), isMounted(t, gone), isMounted(t, alone))
	}
	recs, _ := m.Records()
	if len(recs) != 1 || recs[0].Pod != "ns/live" {
		t.Fatalf("records %+v", recs)
	}
	stagings, _ := m.stagings()
	if len(stagings) != 1 { // db's, which live still uses; logs' went with gone
		t.Fatalf("stagings %+v", stagings)
	}
	if err := m.Unpublish(ctx, "ns/live", live); err != nil {
		t.Fatal(err)
	}
	checkClean(t, e)
	calls := e.server.got()
	if n := len(slices.DeleteFunc(calls, func(c string) bool { return !strings.HasPrefix(c, "release") })); n != 3 {
		t.Errorf("releases %d, want 3", n)
	}
}

func checkCalls(t *testing.T, p *testPlugin, want []string) {
	t.Helper()
	got := slices.DeleteFunc(p.srv.Calls(), func(c string) bool { return c == "CreateVolume" })
	if !slices.Equal(got, want) {
		t.Errorf("plugin calls %q, want %q", got, want)
	}
}

// checkClean checks that nothing is left: records, stagings, mounts, directories.
func checkClean(t *testing.T, e *env) {
	t.Helper()
	if recs, err := e.m.Records(); err != nil || len(recs) != 0 {
		t.Errorf("records %+v, %v", recs, err)
	}
	if st, err := e.m.stagings(); err != nil || len(st) != 0 {
		t.Errorf("stagings %+v, %v", st, err)
	}
	for _, d := range []string{e.opts.StagingDir, filepath.Join(e.dir, "pods")} {
		if mps, _ := mountinfo.Below(mountTable, d); len(mps) != 0 {
			t.Errorf("mounts left: %q", mps)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(e.opts.StagingDir, csitest.DefaultName)); len(entries) != 0 {
		t.Errorf("staging directories left: %v", entries)
	}
}
