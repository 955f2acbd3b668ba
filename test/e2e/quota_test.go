package e2e

import (
	"strings"
	"testing"
	"time"
)

// Namespace quotas against the real binary and Docker (docs/policy.md, "Quotas and
// limit defaults"), on one server and agent that the cases share: a scale past the cpu
// quota is refused with the namespace, resource, usage and limit named; a GPU request is
// refused by the quota before any card is looked for (the node has none); a job's runs
// wait for room in the quota rather than fail, and all complete.
func TestNamespaceQuota(t *testing.T) {
	s, _ := startDockerNode(t, "dk-quota", "35750-35799")
	s.mustBerth("quota", "set", "e2e", "cpu=0.5", "gpu=0", "instances=3", "--max", "cpu=0.4")
	t.Run("a scale past the quota is refused", func(t *testing.T) { quotaRefusesScale(t, s) })
	t.Run("a GPU request is refused by the quota", func(t *testing.T) { quotaRefusesGPU(t, s) })
	t.Run("job runs wait for room", func(t *testing.T) { quotaHoldsJobRuns(t, s) })
}

func quotaRefusesScale(t *testing.T, s *devServer) {
	s.applySpec(t, appSpec{name: "web", ns: "e2e", instances: 2, containers: []string{container("web", "exec sleep 100000", "")}}.json())
	s.running(t, "e2e", "web", 2)
	r := s.berth("", "scale", "application", "web", "6", "-n", "e2e")
	if want := "namespace e2e: cpu quota exceeded: 0.2 used + 0.4 asked > 0.5"; r.code == 0 || !strings.Contains(r.stderr, want) {
		t.Errorf("scale to 6: exit %d, %q, want %q", r.code, r.stderr, want)
	}
	out := s.mustBerth("describe", "namespace", "e2e")
	for _, want := range []string{"cpu", "0.2", "0.5", "instances", "MAX"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe namespace: no %q in\n%s", want, out)
		}
	}
	// A task above the namespace's maximum is refused with its field named.
	big := appSpec{name: "big", ns: "e2e", containers: []string{container("big", "exec sleep 100000", `,"resources":{"requests":{"cpu":"0.45"}}`)}}
	r = s.berth(big.json(), "apply", "-f", "-")
	if want := "spec.template.spec.containers[0].resources.requests.cpu"; r.code == 0 || !strings.Contains(r.stderr, want) {
		t.Errorf("task above the maximum: exit %d, %q, want %q", r.code, r.stderr, want)
	}
}

func quotaRefusesGPU(t *testing.T, s *devServer) {
	gpu := appSpec{name: "gpu", ns: "e2e", containers: []string{container("gpu", "exec sleep 100000",
		`,"resources":{"requests":{"cpu":"0.1"},"extendedResources":[{"name":"nvidia.com/gpu","value":1}]}`)}}
	r := s.berth(gpu.json(), "apply", "-f", "-")
	if want := "namespace e2e: gpu quota exceeded: 0 used + 1 asked > 0"; r.code == 0 || !strings.Contains(r.stderr, want) {
		t.Errorf("GPU app: exit %d, %q, want %q", r.code, r.stderr, want)
	}
}

// quotaHoldsJobRuns: web holds 2 of the 3 instances, so a job of 3 runs, all allowed
// at once by its parallelism, runs one at a time.
func quotaHoldsJobRuns(t *testing.T, s *devServer) {
	job := fmtSpec(`{"apiVersion":"v4","kind":"job","metadata":{"name":"batch","namespace":"e2e"},"killPolicy":{"gracePeriod":1},
	"spec":{"template":{"spec":{"containers":[%s]}},"completions":3,"parallelism":3}}`, container("work", "sleep 1", ""))
	s.applySpec(t, job)
	s.eventsSay("wait for room in the namespace's quota", "-n", "e2e")
	waitUntil(t, 90*time.Second, "the job to complete", func() bool {
		return strings.Contains(s.mustBerth("get", "job", "batch", "-n", "e2e", "-o", "json"), `"succeeded": 3`)
	})
	s.mustBerth("delete", "job", "batch", "-n", "e2e") // its task groups go with it, before the applications' cleanup
}
