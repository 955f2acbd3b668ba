// Package requires skips a test whose outside tool is missing, or fails it where CI has
// said the tool must be there. Only tests import it.
package requires

import (
	"os"
	"os/exec"
	"testing"
)

// HAProxy returns the path of the haproxy command; without it the test is skipped, or
// failed when BERTH_REQUIRE_HAPROXY=1 (CI).
func HAProxy(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err == nil {
		return bin
	}
	if os.Getenv("BERTH_REQUIRE_HAPROXY") == "1" {
		t.Fatal("this test needs haproxy (apt-get install haproxy) and BERTH_REQUIRE_HAPROXY=1 is set")
	}
	t.Skip("this test needs haproxy (apt-get install haproxy)")
	return ""
}
