package ui

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestConsoleWords runs the console's own unit tests (testdata/*.test.mjs) with node: the
// words it shows for sizes and for a workload waiting for a node, and what an instance's
// page computes (CPU rates, its graphs' paths, ports, env without secrets), and the workflow
// archive's paths, links and actions (hostile names kept in their segment). Without node it skips,
// unless BERTH_REQUIRE_NODE=1 (CI).
func TestConsoleWords(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("BERTH_REQUIRE_NODE") == "1" {
			t.Fatal("BERTH_REQUIRE_NODE=1 and node is not installed")
		}
		t.Skip("node is not installed")
	}
	tests, err := filepath.Glob("testdata/*.test.mjs")
	if err != nil || len(tests) < 2 {
		t.Fatalf("the console's tests: %v %v", tests, err)
	}
	out, err := exec.Command(node, append([]string{"--test"}, tests...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
}
