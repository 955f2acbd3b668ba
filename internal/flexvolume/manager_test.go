package flexvolume

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/retrysweep"
)

// A real driver bind-mounts a directory: the pod's dir shows its files, a second Mount
// leaves it be, Unmount undoes it and forgets it.
func TestBindDriverMountUnmount(t *testing.T) {
	requireRoot(t)
	m := newTestManager(t, time.Minute)
	calls := installDriver(t, m, "acme/bind", bindDriver)
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "hello"), []byte("from the driver"), 0o644))
	dir := filepath.Join(t.TempDir(), "pods", "ns.web-0", "volumes", "data")
	v := &v4.FlexVolume{Driver: "acme/bind", FSType: "ext4", ReadOnly: true,
		Options: map[string]string{"source": src, "kubernetes.io/pod.name": "spoofed"}}
	secret := map[string][]byte{"password": []byte("s3cr3t")}
	ctx := ctxT(t)
	must(t, m.Mount(ctx, "ns/web-0", dir, v, secret))
	t.Cleanup(func() { _ = m.Unmount(ctx, "ns/web-0", dir, v) })
	if b, err := os.ReadFile(filepath.Join(dir, "hello")); err != nil || string(b) != "from the driver" {
		t.Fatalf("mounted volume: %q, %v", b, err)
	}
	must(t, m.Mount(ctx, "ns/web-0", dir, v, secret)) // idempotent
	if got := calls(); got != "init\nmount\n" {
		t.Fatalf("driver calls:\n%s", got)
	}
	recs, err := m.Records()
	if err != nil || len(recs) != 1 || recs[0].Pod != "ns/web-0" || recs[0].Dir != dir || recs[0].Driver != "acme/bind" {
		t.Fatalf("records: %+v, %v", recs, err)
	}
	checkOptions(t, m, src)

	must(t, m.Unmount(ctx, "ns/web-0", dir, v))
	if mounted(t, dir) {
		t.Fatal("still mounted")
	}
	if recs, _ := m.Records(); len(recs) != 0 {
		t.Fatalf("records after unmount: %+v", recs)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the empty mount dir stays: %v", err)
	}
	must(t, m.Unmount(ctx, "ns/web-0", dir, v)) // not mounted: no error
	if got := calls(); got != "init\nmount\nunmount\n" {
		t.Fatalf("driver calls:\n%s", got)
	}
}

// checkOptions reads the options the bind driver got: the kubelet's keys, set by the
// agent over the spec's, and the secret in base64.
func checkOptions(t *testing.T, m *Manager, src string) {
	t.Helper()
	var logFile string
	b, _ := os.ReadFile(filepath.Join(m.opts.PluginDir, "acme~bind", "bind"))
	for _, f := range strings.Fields(string(b)) {
		if strings.HasSuffix(f, "calls.log.opts") {
			logFile = f
		}
	}
	raw, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	var opts map[string]string
	must(t, json.Unmarshal(raw, &opts))
	want := map[string]string{"source": src, "kubernetes.io/fsType": "ext4", "kubernetes.io/readwrite": "ro",
		"kubernetes.io/pod.name": "web-0", "kubernetes.io/pod.namespace": "ns", "kubernetes.io/pod.uid": podUID("ns/web-0"),
		"kubernetes.io/secret/password": base64.StdEncoding.EncodeToString([]byte("s3cr3t"))}
	for k, v := range want {
		if opts[k] != v {
			t.Errorf("option %s = %q, want %q (all: %v)", k, opts[k], v, opts)
		}
	}
}

// The mounts of pods the agent no longer runs (a crash between a pod's end and its
// unmount) are undone by a sweep; those of running pods stay.
func TestSweepUnmountsLeftovers(t *testing.T) {
	requireRoot(t)
	m := newTestManager(t, time.Minute)
	installDriver(t, m, "acme/bind", bindDriver)
	src := t.TempDir()
	ctx := ctxT(t)
	base := t.TempDir()
	gone, kept := filepath.Join(base, "gone"), filepath.Join(base, "kept")
	must(t, m.Mount(ctx, "ns/gone", gone, flex("acme/bind", map[string]string{"source": src}), nil))
	must(t, m.Mount(ctx, "ns/kept", kept, flex("acme/bind", map[string]string{"source": src}), nil))
	t.Cleanup(func() { _ = m.Unmount(ctx, "ns/kept", kept, nil) })

	// A new manager, as after a restart of the agent.
	m2, err := New(m.opts)
	must(t, err)
	next := m2.Sweep(ctx, func(pod string) bool { return pod == "ns/kept" }, time.Now())
	if !next.IsZero() || mounted(t, gone) || !mounted(t, kept) {
		t.Fatalf("after the sweep: next %v, gone mounted %v, kept mounted %v", next, mounted(t, gone), mounted(t, kept))
	}
	if recs, _ := m2.Records(); len(recs) != 1 || recs[0].Pod != "ns/kept" {
		t.Fatalf("records: %+v", recs)
	}
}

// An unmount that fails is reported and retried after a backoff until it succeeds.
func TestSweepRetriesFailedUnmount(t *testing.T) {
	requireRoot(t)
	m := newTestManager(t, time.Minute)
	var failed []int
	m.opts.Failed = func(r Record, attempt int, err error) {
		if r.Pod != "ns/gone" || !strings.Contains(err.Error(), "device is busy, try later") {
			t.Errorf("Failed(%+v, %d, %v)", r, attempt, err)
		}
		failed = append(failed, attempt)
	}
	installDriver(t, m, "acme/bind", bindDriver)
	ctx := ctxT(t)
	dir := filepath.Join(t.TempDir(), "vol")
	must(t, m.Mount(ctx, "ns/gone", dir, flex("acme/bind", map[string]string{"source": t.TempDir()}), nil))
	busy := strings.Replace(bindDriver, `unmount)`, `unmount) echo '{"status":"Failure","message":"device is busy, try later"}'; exit 1 ;;
xunmount)`, 1)
	installDriver(t, m, "acme/bind", busy)
	gone := func(string) bool { return false }

	now := time.Now()
	next := m.Sweep(ctx, gone, now)
	if next.IsZero() || m.Pending() != 1 || !mounted(t, dir) {
		t.Fatalf("after a failed unmount: next %v, pending %d", next, m.Pending())
	}
	if again := m.Sweep(ctx, gone, now.Add(time.Second)); !again.Equal(next) || len(failed) != 1 {
		t.Fatalf("retried before the backoff: next %v, failures %v", again, failed)
	}
	second := m.Sweep(ctx, gone, next)
	if !second.After(next.Add(retrysweep.RetryMin)) || len(failed) != 2 || failed[1] != 2 {
		t.Fatalf("the backoff does not grow: %v then %v, failures %v", next, second, failed)
	}
	installDriver(t, m, "acme/bind", bindDriver) // the operator fixed it
	if n := m.Sweep(ctx, gone, second); !n.IsZero() || m.Pending() != 0 || mounted(t, dir) {
		t.Fatalf("after the fix: next %v, pending %d, mounted %v", n, m.Pending(), mounted(t, dir))
	}
}
