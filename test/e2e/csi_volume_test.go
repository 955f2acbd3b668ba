package e2e

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// csiPluginName is the test plugin's name (internal/csi/csitest.DefaultName).
const csiPluginName = "csitest.berth.io"

// csiCluster is a server and two process-only agents, csi-a and csi-b, each running the
// directory-backed test plugin (test/csiplugin) as a daemonset task: a real program
// serving CSI's gRPC services on the socket its csiPlugin volume gives it. Each node's
// plugin keeps its volumes in its own root, so a volume created on csi-a is accessible
// there only (its topology says so).
type csiCluster struct {
	s     *devServer
	nodes map[string]*agentProc
	roots string // <roots>/<node>/volumes/<id>/data
}

// TestCSIVolumes runs a volume's whole life through berth and a CSI plugin program
// (docs/volumes.md): the plugin found on both nodes, a volume created by its controller
// with the topology of csi-a, a process claiming it placed on csi-a only, its file
// written through the published mount into the plugin's volume, delete refused while
// claimed, the publication kept across a kill -9 and restart of the agent, unpublished,
// unstaged and released when the process goes, and the volume deleted by the plugin;
// then the same path with the real GCE PD driver (csi_gcepd_test.go).
func TestCSIVolumes(t *testing.T) {
	requireRoot(t)
	c := startCSICluster(t)
	t.Run("plugins reported by both nodes", func(t *testing.T) { c.pluginsReported(t) })
	vol := c.createVolume(t, "data", `"topology":{"required":[{"segments":{"topology.csitest/node":"csi-a"}}]},`)
	t.Run("claimed, written, kept across an agent restart, released", func(t *testing.T) { c.claimLifecycle(t, vol) })
	t.Run("a claim the topology forbids stays pending", func(t *testing.T) { c.topologyRefused(t) })
	t.Run("deleted through the plugin", func(t *testing.T) { c.deleteVolume(t, vol) })
	t.Run("a volume of the real GCE PD driver", func(t *testing.T) { c.gcePD(t) })
}

func startCSICluster(t *testing.T) *csiCluster {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "csiplugin")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/berthhq/berth/test/csiplugin").CombinedOutput(); err != nil {
		t.Fatalf("build the test plugin: %v\n%s", err, out)
	}
	passable(t, filepath.Dir(bin))
	c := &csiCluster{s: startServer(t, t.TempDir()), nodes: map[string]*agentProc{}, roots: t.TempDir()}
	c.nodes["csi-a"] = startAgent(t, c.s, "csi-a", "33700-33749", "--docker", "off", "--allow-privileged")
	c.nodes["csi-b"] = startAgent(t, c.s, "csi-b", "33750-33799", "--docker", "off", "--allow-privileged")
	c.s.cleanupProcesses("e2e-csi")
	c.s.cleanupOwners("e2e-csi", "daemonsets", 30*time.Second)
	c.s.applySpec(t, fmtSpec(`{"apiVersion":"v4","kind":"daemonset","metadata":{"name":"csi-plugin","namespace":"e2e-csi"},
	"restartPolicy":{"policy":"Always"},"killPolicy":{"gracePeriod":2},
	"spec":{"template":{"spec":{
		"volumes":[{"name":"socket","csiPlugin":{"name":%q}}],
		"processes":[{"procName":"csiplugin","user":"root","startGracePeriod":1,
			"startCmd":"exec %s --root %s/$BERTH_NODE_NAME --nodeid $BERTH_NODE_NAME --controller-publish",
			"resources":{"limits":{"cpu":"0.2","memory":"64"}}}]}}}}`, csiPluginName, bin, c.roots))
	return c
}

// node returns a node object.
func (c *csiCluster) node(t *testing.T, name string) v4.Node {
	t.Helper()
	var n v4.Node
	if err := json.Unmarshal([]byte(c.s.mustBerth("get", "node", name, "-o", "json")), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (c *csiCluster) pluginsReported(t *testing.T) {
	for name := range c.nodes {
		waitUntil(t, 60*time.Second, "node "+name+" reports a healthy "+csiPluginName, func() bool {
			for _, p := range c.node(t, name).Status.CSIPlugins {
				if p.Name == csiPluginName && p.Healthy && p.Node && p.Controller {
					return p.NodeID == name && p.Topology["topology.csitest/node"] == name
				}
			}
			return false
		})
	}
}

// volume returns a volume object, or nil once it is gone.
func (c *csiCluster) volume(t *testing.T, name string) *v4.CSIVolume {
	t.Helper()
	r := c.s.berth("", "get", "volume", name, "-n", "e2e-csi", "-o", "json")
	if r.code != 0 {
		if strings.Contains(r.stderr, "not found") {
			return nil
		}
		t.Fatalf("get volume %s: %s", name, r.stderr)
	}
	var v v4.CSIVolume
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatal(err)
	}
	return &v
}

// createVolume applies a volume of the test plugin and waits until it is Available.
func (c *csiCluster) createVolume(t *testing.T, name, extra string) *v4.CSIVolume {
	t.Helper()
	c.s.applySpec(t, fmtSpec(`{"apiVersion":"v4","kind":"volume","metadata":{"name":%q,"namespace":"e2e-csi"},
	"spec":{"plugin":%q,"capacity":{"min":"1Mi","max":"1Gi"},"accessMode":"single-node-writer",%s
		"parameters":{"purpose":"e2e"}}}`, name, csiPluginName, extra))
	var v *v4.CSIVolume
	waitUntil(t, 60*time.Second, "volume "+name+" Available", func() bool {
		v = c.volume(t, name)
		return v != nil && v.Status.Phase == v4.VolumeAvailable
	})
	if v.Status.ExternalID == "" || v.Status.Capacity != 1<<20 {
		t.Errorf("volume status %+v: want an external ID and 1 MiB", v.Status)
	}
	if len(v.Status.Topology) != 1 || v.Status.Topology[0].Segments["topology.csitest/node"] != "csi-a" {
		t.Errorf("volume topology %+v, want csi-a's", v.Status.Topology)
	}
	return v
}

// dataDir is where the plugin on node keeps the volume's files.
func (c *csiCluster) dataDir(node string, v *v4.CSIVolume) string {
	return filepath.Join(c.roots, node, "volumes", v.Status.ExternalID, "data")
}

// claimingProcess is a process whose pod claims volume as "data" and appends a line to
// data/log each time it starts.
func claimingProcess(name, volume, constraint string) string {
	return fmtSpec(`{"apiVersion":"v4","kind":"process","metadata":{"name":%q,"namespace":"e2e-csi"},
	"restartPolicy":{"policy":"Never"},"killPolicy":{"gracePeriod":1},%s
	"spec":{"instance":1,"template":{"spec":{
		"volumes":[{"name":"data","csi":{"volume":%q}}],
		"processes":[{"procName":"sleep","user":"root","startCmd":"echo started >> data/log; exec sleep 100000","startGracePeriod":1,
			"volumes":[{"volume":{"mountPath":"data","podVolume":"data"}}],
			"resources":{"limits":{"cpu":"0.1","memory":"32"}}}]}}}}`, name, constraint, volume)
}
