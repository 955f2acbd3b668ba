package csi

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/csi/csitest"
)

// TestCSITestPlugin runs the volume lifecycle against berth's own directory-backed test
// plugin (internal/csi/csitest), which berth's agent and end-to-end tests use where no
// storage plugin can be installed: with and without the publish and stage capabilities.
func TestCSITestPlugin(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("the csitest plugin bind-mounts: CI runs as root")
		}
		t.Skip("the csitest plugin bind-mounts: run as root")
	}
	for _, tc := range []struct {
		name string
		opts csitest.Options
	}{
		{"publish and stage", csitest.Options{ControllerPublish: true}},
		{"no publish, no stage", csitest.Options{NoStage: true}},
	} {
		t.Run(tc.name, func(t *testing.T) { volumeLifecycle(t, startCSITest(t, tc.opts)) })
	}
}

// startCSITest serves a csitest plugin in a fresh temp dir.
func startCSITest(t *testing.T, opts csitest.Options) *runningPlugin {
	dir, err := os.MkdirTemp("", "csi") // short: a socket address holds 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	opts.NodeID, opts.Root = "berth-csi-node", filepath.Join(dir, "root")
	sock := filepath.Join(dir, "csi.sock")
	srv, err := csitest.Serve(sock, opts)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(csitest.DefaultName, sock, Options{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		srv.Close()
		unmountUnder(t, dir)
		os.RemoveAll(dir)
	})
	waitReady(t, c, "the csitest plugin")
	return &runningPlugin{client: c, node: opts.NodeID, dir: dir}
}
