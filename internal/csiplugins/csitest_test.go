package csiplugins

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berthhq/berth/internal/csi/csitest"
)

// The registry describes berth's directory-backed test plugin as the node reports it:
// both services with publish and stage, or the node service alone.
func TestRegistryDescribesTestPlugin(t *testing.T) {
	dir := pluginDir(t)
	for _, o := range []csitest.Options{
		{Name: "full.csitest.berth.io", NodeID: "n1", ControllerPublish: true, MaxVolumes: 4},
		{Name: "node.csitest.berth.io", NodeID: "n1", NoController: true, NoStage: true},
	} {
		o.Root = t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, o.Name), 0o750); err != nil {
			t.Fatal(err)
		}
		srv, err := csitest.Serve(filepath.Join(dir, o.Name, SocketName), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
	}
	r := newRegistry(t, dir)
	r.Scan(context.Background())
	l := r.List()
	if len(l) != 2 {
		t.Fatalf("List = %+v", l)
	}
	full, node := l[0], l[1]
	if !full.Healthy || !full.Controller || !full.Node || full.NodeID != "n1" || full.MaxVolumes != 4 ||
		full.Topology["topology.csitest/node"] != "n1" ||
		strings.Join(full.ControllerCapabilities, ",") != "create-delete,publish-unpublish" ||
		strings.Join(full.NodeCapabilities, ",") != "stage-unstage" {
		t.Errorf("full plugin %+v", full)
	}
	if !node.Healthy || node.Controller || !node.Node || len(node.ControllerCapabilities) != 0 || len(node.NodeCapabilities) != 0 {
		t.Errorf("node plugin %+v", node)
	}
	// Later scans keep the plugins (the same sockets, the same clients), only probed.
	c1, _, _ := r.Client(full.Name)
	<-r.Changes()
	for range 3 {
		r.Scan(context.Background())
	}
	if c2, info, ok := r.Client(full.Name); !ok || c2 != c1 || !info.Healthy {
		t.Errorf("after more scans: %p %+v %t, want the same healthy client %p", c2, info, ok, c1)
	}
	if changed(r) {
		t.Error("scans that found the same plugins signalled a change")
	}
}
