package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/fake"
	"github.com/berthhq/berth/internal/executor"
)

// otherCluster is the ID of a cluster other than the test's.
var otherCluster = "sha256:" + strings.Repeat("b", 64)

// Another cluster's tasks labelled with this node's name (a second berth dev on the
// machine, whose node is named after the host too) are neither adopted nor stopped: the
// agent starts its own copy of a task group it wants, and leaves the other cluster's
// tasks of task groups it does not know running. A task of this node started before
// tasks carried their cluster is adopted as before.
func TestOtherClustersTasksAreNeitherAdoptedNorStopped(t *testing.T) {
	c := newCluster(t)
	drv := fake.New("process")
	wanted, legacy := processTG("0.web.ns-a.c.1"), processTG("1.web.ns-a.c.1")
	// The other cluster's copy of a task group this one wants too: the real drivers keep
	// the two apart by name (container names, cgroups), the fake by its task ID.
	theirs := fakeTask(wanted)
	theirs.ID = "other-cluster." + theirs.ID
	theirs.Labels[driver.LabelCluster] = otherCluster
	theirPid := drv.Add(theirs).Info.Pid
	orphan := fakeTask(processTG("9.old.ns-a.c.1"))
	orphan.Labels[driver.LabelCluster] = otherCluster
	drv.Add(orphan)
	legacyPid := drv.Add(fakeTask(legacy)).Info.Pid
	createTG(t, wanted)
	createTG(t, legacy)

	dir := t.TempDir()
	startAgent(t, c, dir, drv)
	if pid := waitPhase(t, wanted.Metadata.Name, v4.StatusRunning).Status.Tasks[0].Info.Pid; pid == theirPid {
		t.Fatalf("the agent adopted the other cluster's task (pid %d)", pid)
	}
	if started := drv.Started(); len(started) != 1 || started[0] != taskID(wanted.Metadata.Name) {
		t.Fatalf("started %v, want this cluster's own copy of %s only", started, wanted.Metadata.Name)
	}
	if pid := waitPhase(t, legacy.Metadata.Name, v4.StatusRunning).Status.Tasks[0].Info.Pid; pid != legacyPid {
		t.Fatalf("the legacy task of this node: reported pid %d, want it adopted (pid %d)", pid, legacyPid)
	}
	// Reconcile has run (both task groups are handled); an orphan it stopped would be
	// stopped by now.
	time.Sleep(300 * time.Millisecond)
	for _, id := range []string{theirs.ID, orphan.ID} {
		if _, stopped := drv.Stopped(id); stopped || !drv.Running(id) {
			t.Errorf("the other cluster's task %s was stopped", id)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "checkpoint.json"))
	if err != nil || !strings.Contains(string(b), fmt.Sprintf("%q: %q", "cluster", c.ca.Hash())) {
		t.Errorf("the checkpoint does not name the cluster %s: %s (%v)", c.ca.Hash(), b, err)
	}
}

// A checkpoint of another cluster (this data dir's agent joined another cluster) is set
// aside, not acted on: the task groups it lists are that cluster's, so their directories
// are not removed as "deleted while the agent was away".
func TestCheckpointOfAnotherClusterIsSetAside(t *testing.T) {
	c := newCluster(t)
	dir := t.TempDir()
	gone := "5.gone.ns-a.c.1"
	podDir := executor.PodDir(dir, testNS, gone)
	if err := os.MkdirAll(filepath.Join(podDir, "work"), 0o700); err != nil {
		t.Fatal(err)
	}
	old := fmt.Sprintf(`{"version":1,"node":%q,"cluster":%q,"taskGroups":{%q:{"namespace":%q,"name":%q,"podDir":%q}}}`,
		testNode, otherCluster, testNS+"/"+gone, testNS, gone, podDir)
	if err := os.WriteFile(filepath.Join(dir, "checkpoint.json"), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	drv := fake.New("process")
	startAgent(t, c, dir, drv)
	runProcessTGs(t, "0.web.ns-a.c.1")
	time.Sleep(300 * time.Millisecond) // what reconcile would remove is gone by now

	if _, err := os.Stat(podDir); err != nil {
		t.Errorf("the other cluster's pod directory: %v", err)
	}
	aside, err := os.ReadFile(filepath.Join(dir, "checkpoint-bbbbbbbbbbbb.json"))
	if err != nil || !strings.Contains(string(aside), gone) {
		t.Errorf("the other cluster's checkpoint was not kept aside: %s (%v)", aside, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "checkpoint.json"))
	if err != nil || strings.Contains(string(b), gone) || !strings.Contains(string(b), c.ca.Hash()) || !strings.Contains(string(b), "0.web") {
		t.Errorf("checkpoint: %s (%v), want this cluster's alone", b, err)
	}
}
