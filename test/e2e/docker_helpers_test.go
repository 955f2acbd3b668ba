package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver/drivertest"
)

// testImage is the image of the container tests, imported from the host's static
// busybox (nothing can be pulled here); the Docker driver's tests share it.
const testImage = drivertest.BusyboxImage

// requireDocker skips container tests without a Docker daemon, unless CI asks for them
// (BERTH_REQUIRE_DOCKER=1), and makes sure the test image exists.
func requireDocker(t *testing.T) {
	t.Helper()
	requireRoot(t)
	if out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		if os.Getenv("BERTH_REQUIRE_DOCKER") == "1" {
			t.Fatalf("BERTH_REQUIRE_DOCKER=1 but docker does not answer: %v\n%s", err, out)
		}
		t.Skipf("docker is not available: %v", err)
	}
	imageOnce.Do(func() { imageErr = ensureTestImage() })
	if imageErr != nil {
		t.Fatalf("test image: %v", imageErr)
	}
}

var (
	imageOnce sync.Once
	imageErr  error
)

// ensureTestImage imports testImage unless it is present.
func ensureTestImage() error {
	if exec.Command("docker", "image", "inspect", testImage).Run() == nil {
		return nil
	}
	rootfs, err := drivertest.BusyboxRootfs()
	if err != nil {
		return fmt.Errorf("a static busybox is needed (apt-get install busybox-static): %w", err)
	}
	cmd := exec.Command("docker", "import", "-", testImage)
	cmd.Stdin = rootfs
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("docker import: %v\n%s", err, out)
	}
	return nil
}

// startDockerNode starts what most container tests run (with Docker): a server and one
// agent with the Docker driver, and deletes namespace e2e's applications when the test
// ends.
func startDockerNode(t *testing.T, name, ports string) (*devServer, *agentProc) {
	t.Helper()
	requireDocker(t)
	s := startServer(t, t.TempDir())
	a := startDockerAgent(t, s, name, ports)
	s.cleanupApps("e2e")
	return s, a
}

// startDockerAgent runs an agent with the Docker driver on (and the extra flags), and
// removes, when the test ends, whatever containers of its node are left (after checking
// there are none: every test deletes its applications first).
func startDockerAgent(t *testing.T, s *devServer, name, ports string, extra ...string) *agentProc {
	t.Helper()
	a := startAgent(t, s, name, ports, append([]string{"--docker", "on"}, extra...)...)
	t.Cleanup(func() {
		if ids := nodeContainers(t, name, true); len(ids) > 0 {
			exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).Run()
		}
	})
	return a
}

// nodeContainers lists the IDs of the task containers of node (all: also ended ones).
func nodeContainers(t *testing.T, node string, all bool) []string {
	t.Helper()
	args := []string{"ps", "-q", "--no-trunc", "--filter", "label=berth.node=" + node}
	if all {
		args = append(args, "-a")
	}
	out, err := exec.Command("docker", args...).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	return strings.Fields(string(out))
}

// inspect returns docker inspect's value of format for a container.
func inspect(t *testing.T, id, format string) string {
	t.Helper()
	out, err := exec.Command("docker", "inspect", "--format", format, id).CombinedOutput()
	if err != nil {
		t.Fatalf("docker inspect %s: %v\n%s", id, err, out)
	}
	return strings.TrimSpace(string(out))
}

// appSpec is a container application.
type appSpec struct {
	name, ns   string
	instances  int
	mode       string // networkMode (default BRIDGE)
	netType    string // networktype (default cnm)
	restart    string // restartPolicy JSON (default Never)
	containers []string
}

func (a appSpec) json() string {
	if a.instances == 0 {
		a.instances = 1
	}
	if a.mode == "" {
		a.mode = "BRIDGE"
	}
	if a.netType == "" {
		a.netType = "cnm"
	}
	if a.restart == "" {
		a.restart = `{"policy":"Never"}`
	}
	return fmtSpec(`{"apiVersion":"v4","kind":"application","metadata":{"name":%q,"namespace":%q,"labels":{"app":%q}},
	"restartPolicy":%s,"killPolicy":{"gracePeriod":1},
	"spec":{"instance":%d,"template":{"spec":{"networkMode":%q,"networktype":%q,"containers":[%s]}}}}`,
		a.name, a.ns, a.name, a.restart, a.instances, a.mode, a.netType, strings.Join(a.containers, ","))
}

// container is one container's JSON: name, shell command, and extra fields (each
// starting with a comma). Without resources it asks for little, so pods of several
// containers fit a small machine (the default is a whole cpu each).
func container(name, shell, extra string) string {
	return fmtSpec(`{"name":%q,"image":%q,"command":"/bin/sh","args":["-c",%q]%s}`, name, testImage, shell, withResources(extra))
}

func withResources(extra string) string {
	if strings.Contains(extra, `"resources"`) {
		return extra
	}
	return extra + `,"resources":{"requests":{"cpu":"0.1","memory":"32"}}`
}

// cleanupApps deletes every application of ns when the test ends and waits for their task
// groups to go (registered after the agents, so it runs while they still do).
func (s *devServer) cleanupApps(ns string) { s.cleanupOwners(ns, "applications", 60*time.Second) }

// execIn runs berth exec in a task and returns its output and exit status.
func (s *devServer) execIn(ns, tg, task string, cmd ...string) cliResult {
	s.t.Helper()
	args := []string{"exec", tg, "-n", ns}
	if task != "" {
		args = append(args, "-t", task)
	}
	return s.berth("", append(append(args, "--"), cmd...)...)
}

// envOf parses `env` output.
func envOf(out string) map[string]string {
	m := map[string]string{}
	for line := range strings.SplitSeq(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
		}
	}
	return m
}

// appStatus returns an application's status.
func (s *devServer) appStatus(ns, name string) v4.WorkloadStatus {
	s.t.Helper()
	var a v4.Application
	if err := json.Unmarshal([]byte(s.mustBerth("get", "application", name, "-n", ns, "-o", "json")), &a); err != nil {
		s.t.Fatal(err)
	}
	return a.Status
}

// waitGone waits until no container of node runs, for cleanup checks.
func waitNoContainers(t *testing.T, node string, limit time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for ctx.Err() == nil {
		if len(nodeContainers(t, node, true)) == 0 {
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Errorf("containers of node %s still there after %s: %v", node, limit, nodeContainers(t, node, true))
}
