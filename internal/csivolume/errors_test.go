package csivolume

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/csi"
	"github.com/berthhq/berth/internal/retrysweep"
)

func time0() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

// What the node cannot publish fails Publish with an error that names the volume (and
// the plugin), calls no plugin, releases what was claimed and leaves no record. None of
// these needs a running plugin.
func TestPublishRefused(t *testing.T) {
	ok := grant("vol-1")
	for _, tc := range []struct {
		name    string
		grant   *v4.CSIClaimGrant // nil: the server refuses the claim
		healthy bool
		want    string
	}{
		{"claim refused", nil, true, "claim volume db: server answered 409 Conflict: volume db is claimed for writing by another node"},
		{"plugin missing", withPlugin(ok, "absent.example"), true, "volume db: CSI plugin absent.example is not running on this node"},
		{"plugin unhealthy", &ok, false, "volume db: CSI plugin csitest.berth.io is not healthy on this node: probe: connection refused"},
		{"block device", withMode(ok, v4.AttachBlockDevice), true, "volume db: a block-device volume cannot be used by a pod yet"},
		{"plugin path", withPlugin(ok, "../../etc"), true, `no plugin name`},
		{"plugin dots", withPlugin(ok, "a..b"), true, `no plugin name`},
		{"no volume ID", withID(ok, ""), true, "volume ID of 0 bytes"},
		{"huge volume ID", withID(ok, strings.Repeat("x", maxExternalID+1)), true, "volume ID of 1025 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			e := newEnv(t, dir)
			if tc.grant == nil {
				e.server.refuse = "volume db is claimed for writing by another node"
			} else {
				e.server.grants["ns/db"] = *tc.grant
			}
			// A client that reaches no plugin: none of these cases may call it.
			e.plugins.set("csitest.berth.io", deadClient(t), tc.healthy)
			target := e.target("ns/a", "data")
			err := e.m.Publish(context.Background(), "ns/a", target, "ns", "a", &v4.CSIVolumeSource{Volume: "db"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Publish: %v, want %q", err, tc.want)
			}
			if recs, err := e.m.Records(); err != nil || len(recs) != 0 {
				t.Errorf("records %+v, %v", recs, err)
			}
			// The teardown of a failed claim releases too: the claim may have been made
			// before its answer was lost.
			if got := e.server.got(); len(got) != 2 || got[1] != "release ns/db a" {
				t.Errorf("server calls %q", got)
			}
			if _, err := os.Stat(target); !os.IsNotExist(err) {
				t.Errorf("target made: %v", err)
			}
		})
	}
}

func withPlugin(g v4.CSIClaimGrant, p string) *v4.CSIClaimGrant { g.Plugin = p; return &g }
func withMode(g v4.CSIClaimGrant, m string) *v4.CSIClaimGrant   { g.AttachmentMode = m; return &g }
func withID(g v4.CSIClaimGrant, id string) *v4.CSIClaimGrant    { g.ExternalID = id; return &g }

// Targets that are not clean absolute paths never reach the server or a plugin.
func TestTargetMustBeClean(t *testing.T) {
	e := newEnv(t, t.TempDir())
	for _, dir := range []string{"rel/dir", "/a/../b", "/a//b", "/a/b/", ""} {
		if err := e.m.Publish(context.Background(), "ns/a", dir, "ns", "a", &v4.CSIVolumeSource{Volume: "db"}); err == nil {
			t.Errorf("Publish at %q: no error", dir)
		}
		if err := e.m.Unpublish(context.Background(), "ns/a", dir); err == nil {
			t.Errorf("Unpublish at %q: no error", dir)
		}
	}
	if got := e.server.got(); len(got) != 0 {
		t.Errorf("server calls %q", got)
	}
}

// A publication a pod that is gone left is torn down by the sweep; one whose teardown
// fails (the server cannot be reached) is kept, retried after a growing backoff and
// reported each time.
func TestSweepRetriesWithBackoff(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, dir)
	rec := Record{Pod: "ns/gone", Dir: e.target("ns/gone", "data"), Namespace: "ns", TaskGroup: "gone", Volume: "db"}
	if err := e.m.saveRecord(rec); err != nil {
		t.Fatal(err)
	}
	e.opts.Claims = failingClaims{}
	m := e.restart(t)
	var attempts []int
	m.opts.Failed = func(_ Record, attempt int, _ error) { attempts = append(attempts, attempt) }
	gone := func(string) bool { return false }
	now := time0()
	next := m.Sweep(context.Background(), gone, now)
	if next != now.Add(retrysweep.RetryMin) {
		t.Fatalf("first retry at %v, want %v", next, now.Add(retrysweep.RetryMin))
	}
	if next = m.Sweep(context.Background(), gone, next); next != now.Add(retrysweep.RetryMin+2*retrysweep.RetryMin) {
		t.Fatalf("second retry at %v", next)
	}
	if len(attempts) != 2 || attempts[1] != 2 || m.Pending() != 1 {
		t.Fatalf("attempts %v, pending %d", attempts, m.Pending())
	}
	m.opts.Claims = e.claims
	if next = m.Sweep(context.Background(), gone, next); !next.IsZero() || m.Pending() != 0 {
		t.Fatalf("after the server came back: next %v, pending %d", next, m.Pending())
	}
	if recs, _ := m.Records(); len(recs) != 0 {
		t.Errorf("records %+v", recs)
	}
}

// failingClaims is a server that cannot be reached.
type failingClaims struct{}

func (failingClaims) Claim(context.Context, v4.CSIClaimRequest) (v4.CSIClaimGrant, error) {
	return v4.CSIClaimGrant{}, errors.New("no server")
}

func (failingClaims) Release(context.Context, v4.CSIClaimRequest) error {
	return errors.New("no server")
}

// deadClient is a client of a socket nobody listens on.
func deadClient(t *testing.T) *csi.Client {
	c, err := csi.New("csitest.berth.io", filepath.Join(t.TempDir(), "none.sock"), csi.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
