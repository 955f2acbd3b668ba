package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// logsApp is an application of one container that appends a line to its instance volume
// /lain/logs at each start (Lain's procs carry that volume).
func logsApp(name, ns string) string {
	return appSpec{name: name, ns: ns, restart: `{"policy":"Always","interval":1}`, containers: []string{
		container("web", "echo started >> /lain/logs/starts; exec sleep 100000",
			`,"volumes":[{"volume":{"mountPath":"/lain/logs","instance":true}}]`),
	}}.json()
}

// starts counts the lines of the starts file in dir.
func starts(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "starts"))
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "started\n")
}

// An instance volume keeps what the container wrote when the instance restarts (its
// container killed, a new task group of the same instance on the node), and goes with its
// workload.
func TestInstanceVolumeSurvivesARestartAndGoesWithItsWorkload(t *testing.T) {
	s, a := startDockerNode(t, "dk-vol", "23100-23199")
	s.applySpec(t, logsApp("logs", "e2e"))
	first := s.running(t, "e2e", "logs", 1)[0]
	dir := filepath.Join(a.dataDir, "volumes", "e2e", "application", "logs", "0", "0", "lain%2Flogs")
	waitUntil(t, 30*time.Second, "the first start's line in "+dir, func() bool { return starts(dir) == 1 })

	// Kill the container: the pod fails, the controller restarts the instance.
	if out, err := exec.Command("docker", "kill", containerIDs(first)[0]).CombinedOutput(); err != nil {
		t.Fatalf("docker kill: %v\n%s", err, out)
	}
	waitUntil(t, 60*time.Second, "the instance restarted", func() bool {
		tgs := s.taskGroups("e2e", "logs")
		return len(tgs) == 1 && tgs[0].Metadata.Name != first.Metadata.Name && tgs[0].Status.Phase == v4.StatusRunning
	})
	waitUntil(t, 30*time.Second, "the second start's line beside the first", func() bool { return starts(dir) == 2 })

	s.mustBerth("delete", "application", "logs", "-n", "e2e")
	waitUntil(t, 60*time.Second, "the task groups to go", func() bool { return len(s.taskGroups("e2e", "logs")) == 0 })
	waitUntil(t, 30*time.Second, "the instance's volumes to go", func() bool {
		_, err := os.Stat(filepath.Join(a.dataDir, "volumes", "e2e"))
		return os.IsNotExist(err)
	})
}

// A token limited to one namespace gets instance volumes without the host-path privilege
// a hostPath needs, cannot point one outside its directory, and its workload's directory
// is its namespace's, not another's of the same name.
func TestInstanceVolumeOfANamespaceToken(t *testing.T) {
	s, a := startDockerNode(t, "dk-volns", "23200-23299")
	s.cleanupApps("team-v")
	team := s.as(teamToken(t, s, "team-v"))
	refused := func(spec string, wants ...string) {
		t.Helper()
		r := team.berth(spec, "apply", "-f", "-")
		if r.code == 0 {
			t.Fatalf("applied: %s", r.stdout)
		}
		for _, w := range wants {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("refusal %q does not name %q", r.stderr, w)
			}
		}
	}
	withVolume := func(volume string) string {
		return appSpec{name: "logs", ns: "team-v", containers: []string{
			container("web", "exec sleep 100000", `,"volumes":[{"volume":`+volume+`}]`)}}.json()
	}
	const field = "containers[0].volumes[0].volume"
	refused(withVolume(`{"mountPath":"/lain/logs","hostPath":"/etc"}`), field+".hostPath", `privilege "host-path"`)
	refused(withVolume(`{"mountPath":"/lain/logs","hostPath":"/etc","instance":true}`), field+".hostPath", "must be empty in an instance volume")
	refused(withVolume(`{"mountPath":"/lain/../../../etc","instance":true}`), field+".mountPath", "'..'")
	refused(withVolume(`{"mountPath":"/lain/logs/","instance":true}`), field+".mountPath", "clean path")
	refused(withVolume(`{"mountPath":"/`+strings.Repeat("a", 2000)+`","instance":true}`), field+".mountPath", "at most 1024 bytes")
	if r := team.berth(logsApp("logs", "default"), "apply", "-f", "-"); r.code == 0 {
		t.Fatal("the team applied in another namespace")
	}

	// Its own, run: the directory is under its namespace's tree; the same workload name
	// in e2e gets another one.
	team.applySpec(t, logsApp("logs", "team-v"))
	s.applySpec(t, logsApp("logs", "e2e"))
	team.running(t, "team-v", "logs", 1)
	s.running(t, "e2e", "logs", 1)
	root := filepath.Join(a.dataDir, "volumes")
	mine := filepath.Join(root, "team-v", "application", "logs", "0", "0", "lain%2Flogs")
	theirs := filepath.Join(root, "e2e", "application", "logs", "0", "0", "lain%2Flogs")
	waitUntil(t, 30*time.Second, "both starts written", func() bool { return starts(mine) == 1 && starts(theirs) == 1 })
	if fi, err := os.Stat(root); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the volumes' root: %v %v, want 0700", fi, err)
	}
	team.mustBerth("delete", "application", "logs", "-n", "team-v")
	waitUntil(t, 60*time.Second, "the team's volumes to go", func() bool {
		_, err := os.Stat(filepath.Join(root, "team-v"))
		return os.IsNotExist(err)
	})
	if starts(theirs) != 1 {
		t.Error("the other namespace's volume went with the team's workload")
	}
	s.mustBerth("delete", "application", "logs", "-n", "e2e")
	waitUntil(t, 60*time.Second, "e2e's task groups to go", func() bool { return len(s.taskGroups("e2e", "logs")) == 0 })
}

// logsDeployment is a deployment (what a deployd pod group is) of one instance whose
// container appends to its instance volume at each start; version changes its template.
func logsDeployment(version string) string {
	return fmtSpec(`{"apiVersion":"v4","kind":"deployment","metadata":{"name":"lainlogs","namespace":"e2e"},
	"restartPolicy":{"policy":"Always","interval":1},"killPolicy":{"gracePeriod":1},
	"spec":{"instance":1,"template":{"spec":{"networkMode":"BRIDGE","containers":[%s]}}}}`,
		container("web", "echo "+version+" >> /lain/logs/starts; exec sleep 100000",
			`,"env":[{"name":"V","value":"`+version+`"}],"volumes":[{"volume":{"mountPath":"/lain/logs","instance":true}}]`))
}

// A deployment's instance keeps its volume when a new revision replaces it on the node,
// and the volume goes with the deployment.
func TestInstanceVolumeKeptAcrossARedeploy(t *testing.T) {
	s, a := startDockerNode(t, "dk-volrd", "23300-23399")
	t.Cleanup(func() { s.berth("", "delete", "deployment", "lainlogs", "-n", "e2e") })
	dir := filepath.Join(a.dataDir, "volumes", "e2e", "deployment", "lainlogs", "0", "0", "lain%2Flogs")
	s.applySpec(t, logsDeployment("one"))
	s.running(t, "e2e", "lainlogs-v1", 1)
	waitUntil(t, 30*time.Second, "revision 1's line", func() bool { return lines(dir) == "one\n" })

	s.applySpec(t, logsDeployment("two"))
	s.running(t, "e2e", "lainlogs-v2", 1)
	waitUntil(t, 60*time.Second, "revision 1 gone", func() bool { return len(s.taskGroups("e2e", "lainlogs-v1")) == 0 })
	waitUntil(t, 30*time.Second, "revision 2's line after revision 1's", func() bool { return lines(dir) == "one\ntwo\n" })

	s.mustBerth("delete", "deployment", "lainlogs", "-n", "e2e")
	waitUntil(t, 60*time.Second, "the task groups to go", func() bool { return len(s.taskGroups("e2e", "lainlogs-v2")) == 0 })
	waitUntil(t, 30*time.Second, "the instance's volumes to go", func() bool {
		_, err := os.Stat(filepath.Join(a.dataDir, "volumes", "e2e"))
		return os.IsNotExist(err)
	})
}

// lines is the starts file of an instance volume's directory.
func lines(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "starts"))
	return string(b)
}
