package e2e

import (
	"maps"
	"path"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/csi/csidriverbuild"
	"github.com/berthhq/berth/internal/csi/gcefake"
)

// The real GCE PD driver's objects in TestCSIVolumes' namespace: its daemonset, a
// volume of it and the process that claims the volume.
const (
	gcePDDaemonset = "gce-pd"
	gcePDVolume    = "pd"
	gcePDWriter    = "pd-writer"
)

// gcePD runs berth's whole CSI path with a real third-party driver: the GCE Persistent
// Disk driver, its cloud faked on loopback (internal/csi/gcefake), run as a daemonset
// process pinned to csi-a and found there by the agent; a volume of it created by the
// server's volume controller through csi-a's agent (the cloud has the disk); a process
// claiming it, which the driver attaches, formats, stages and publishes, writing through
// the mount; the process deleted (unpublished, unstaged, detached: the file is on the
// cloud's disk); the volume deleted (the disk gone from the cloud).
func (c *csiCluster) gcePD(t *testing.T) {
	bin := csidriverbuild.Require(t, gcefake.Driver)
	cloud := gcefake.New(t)
	start := time.Now()
	c.s.applySpec(t, gcePDDaemonsetSpec(bin, cloud, t.TempDir()))
	t.Cleanup(func() { c.gcePDCleanup(t, procName(bin)) }) // before the cloud's: the driver goes first
	c.gcePDReported(t)
	vol := c.gcePDVolume(t)
	name := path.Base(vol.Status.ExternalID) // the cloud's disk
	if d, ok := cloud.Disk(name); !ok || d.SizeGB != 1 || d.Attached {
		t.Fatalf("the cloud's disk %s = %+v (%t), want 1 GB, detached", name, d, ok)
	}

	s := c.s
	s.applySpec(t, claimingProcess(gcePDWriter, gcePDVolume, ""))
	tg := s.running(t, "e2e-csi", gcePDWriter, 1)[0]
	if tg.Spec.Node != "csi-a" {
		t.Fatalf("the claiming process runs on %s; the driver runs on csi-a only", tg.Spec.Node)
	}
	if d, _ := cloud.Disk(name); !d.Attached {
		t.Errorf("the cloud's disk %s is not attached while the process runs", name)
	}
	claims := c.volume(t, gcePDVolume).Status.Claims
	if len(claims) != 1 || claims[0].Node != "csi-a" || claims[0].Mode != "write" {
		t.Errorf("volume claims %+v: want the writer's on csi-a", claims)
	}

	s.mustBerth("delete", "process", gcePDWriter, "-n", "e2e-csi")
	waitUntil(t, 30*time.Second, "the volume unpublished, unstaged, released and detached", func() bool {
		v := c.volume(t, gcePDVolume)
		d, _ := cloud.Disk(name)
		return v != nil && len(v.Status.Claims) == 0 && !d.Attached && len(s.taskGroups("e2e-csi", gcePDWriter)) == 0
	})
	d, _ := cloud.Disk(name)
	if fs, err := d.FSType(); err != nil || fs != "ext4" {
		t.Errorf("the disk's file system = %q, %v; want ext4", fs, err)
	}
	if b, err := d.ReadFile("/log"); err != nil || b != "started\n" {
		t.Errorf("the process's file on the disk = %q, %v; want one line", b, err)
	}

	s.mustBerth("delete", "volume", gcePDVolume, "-n", "e2e-csi")
	waitUntil(t, 30*time.Second, "the volume object gone", func() bool { return c.volume(t, gcePDVolume) == nil })
	if _, ok := cloud.Disk(name); ok {
		t.Errorf("disk %s still in the cloud after the volume's delete", name)
	}
	t.Logf("the GCE PD driver's volume, from the daemonset to the disk's delete: %s", time.Since(start).Round(time.Second))
}

// gcePDDaemonsetSpec runs the driver as csi-a's plugin, with both its services, as the
// unit test runs it (internal/csi/gcepd_test.go): the fake cloud's metadata server and
// Compute API, and a HOME without gcloud credentials.
func gcePDDaemonsetSpec(bin string, cloud *gcefake.Cloud, home string) string {
	return fmtSpec(`{"apiVersion":"v4","kind":"daemonset","metadata":{"name":%q,"namespace":"e2e-csi"},
	"restartPolicy":{"policy":"Always"},"killPolicy":{"gracePeriod":2},
	"constraint":{"intersectionItem":[{"unionData":[{"name":"hostname","operate":"CLUSTER","type":3,"text":{"value":"csi-a"}}]}]},
	"spec":{"template":{"spec":{
		"volumes":[{"name":"socket","csiPlugin":{"name":%q}}],
		"processes":[{"procName":%q,"user":"root","startGracePeriod":1,
			"startCmd":"exec %s --endpoint $CSI_ENDPOINT %s",
			"env":[{"name":"GCE_METADATA_HOST","value":%q},{"name":"HOME","value":%q}],
			"resources":{"limits":{"cpu":"1","memory":"256"}}}]}}}}`,
		gcePDDaemonset, gcefake.DriverName, procName(bin), bin, strings.Join(cloud.DriverArgs(), " "), cloud.MetadataHost(), home)
}

// procName is the name the kernel gives a process of bin, which a process task's
// procName must be: the file's name, cut to 15 bytes.
func procName(bin string) string {
	name := path.Base(bin)
	return name[:min(len(name), 15)]
}

// gcePDReported waits for csi-a to report the driver healthy, with the node ID and zone
// it makes of the fake metadata server's answers.
func (c *csiCluster) gcePDReported(t *testing.T) {
	zone := map[string]string{gcefake.ZoneKey: gcefake.Zone}
	waitUntil(t, 60*time.Second, "node csi-a reports a healthy "+gcefake.DriverName, func() bool {
		for _, p := range c.node(t, "csi-a").Status.CSIPlugins {
			if p.Name == gcefake.DriverName && p.Healthy && p.Node && p.Controller {
				return p.NodeID == gcefake.NodeID && maps.Equal(p.Topology, zone)
			}
		}
		return false
	})
}

// gcePDVolume applies a volume of the driver in the driver's zone and waits until the
// controller created it.
func (c *csiCluster) gcePDVolume(t *testing.T) *v4.CSIVolume {
	c.s.applySpec(t, fmtSpec(`{"apiVersion":"v4","kind":"volume","metadata":{"name":%q,"namespace":"e2e-csi"},
	"spec":{"plugin":%q,"capacity":{"min":"1Gi","max":"1Gi"},"accessMode":"single-node-writer",
		"mountOptions":{"fsType":"ext4"},"topology":{"required":[{"segments":{%q:%q}}]}}}`,
		gcePDVolume, gcefake.DriverName, gcefake.ZoneKey, gcefake.Zone))
	var v *v4.CSIVolume
	waitUntil(t, 30*time.Second, "volume "+gcePDVolume+" Available", func() bool {
		v = c.volume(t, gcePDVolume)
		return v != nil && v.Status.Phase == v4.VolumeAvailable
	})
	wantPrefix := "projects/" + gcefake.Project + "/zones/" + gcefake.Zone + "/disks/"
	if !strings.HasPrefix(v.Status.ExternalID, wantPrefix) || v.Status.Capacity != 1<<30 {
		t.Errorf("volume status %+v: want a disk %s… of 1 GiB", v.Status, wantPrefix)
	}
	if len(v.Status.Topology) != 1 || v.Status.Topology[0].Segments[gcefake.ZoneKey] != gcefake.Zone {
		t.Errorf("volume topology %+v, want zone %s", v.Status.Topology, gcefake.Zone)
	}
	return v
}

// gcePDCleanup removes the driver's objects, whatever the test left, while the fake
// cloud still serves: the claiming process, the volume, then the driver. On a failure it
// logs the output of the driver's task first.
func (c *csiCluster) gcePDCleanup(t *testing.T, task string) {
	s := c.s
	if t.Failed() {
		for _, tg := range s.taskGroups("e2e-csi", gcePDDaemonset) {
			r := s.berth("", "logs", tg.Metadata.Name, "-n", "e2e-csi", "-t", task, "--stderr")
			t.Logf("the GCE PD driver's output (%s):\n%s%s", tg.Metadata.Name, r.stdout, r.stderr)
		}
	}
	s.berth("", "delete", "process", gcePDWriter, "-n", "e2e-csi", "--ignore-not-found")
	s.berth("", "delete", "volume", gcePDVolume, "-n", "e2e-csi", "--ignore-not-found")
	gone := func(limit time.Duration, cond func() bool) {
		for deadline := time.Now().Add(limit); time.Now().Before(deadline) && !cond(); {
			time.Sleep(200 * time.Millisecond)
		}
	}
	gone(30*time.Second, func() bool {
		return len(s.taskGroups("e2e-csi", gcePDWriter)) == 0 && c.volume(t, gcePDVolume) == nil
	})
	s.berth("", "delete", "daemonset", gcePDDaemonset, "-n", "e2e-csi", "--ignore-not-found")
	gone(30*time.Second, func() bool { return len(s.taskGroups("e2e-csi", gcePDDaemonset)) == 0 })
}
