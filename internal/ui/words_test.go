package ui

import (
	"os"
	"os/exec"
	"testing"
)

// TestConsoleWords runs the console's own unit tests (testdata/*.test.mjs) with node: the
// words it shows for sizes and for a workload waiting for a node. Without node it skips,
// unless BERTH_REQUIRE_NODE=1 (CI).
func TestConsoleWords(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("BERTH_REQUIRE_NODE") == "1" {
			t.Fatal("BERTH_REQUIRE_NODE=1 and node is not installed")
		}
		t.Skip("node is not installed")
	}
	out, err := exec.Command(node, "--test", "testdata/words.test.mjs").CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
}
