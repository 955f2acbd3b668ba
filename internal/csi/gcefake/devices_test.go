package gcefake

import (
	"strings"
	"testing"
)

// TestAttachRefusesForeignNames checks that the fake makes no device node or link for a
// name that is not one of berth's (or not a GCE name at all) before it touches anything.
func TestAttachRefusesForeignNames(t *testing.T) {
	for _, name := range []string{"sda", "nvme0n1", "berth", "berth-", "berth-../../etc", "berth-a/b", "Berth-x", "google-berth-x", ""} {
		if a, err := attachDevice(t, "/nonexistent", name, "READ_WRITE"); err == nil || !strings.Contains(err.Error(), "only valid names") {
			t.Errorf("attachDevice(%q) = %+v, %v; want a refusal", name, a, err)
		}
	}
}
