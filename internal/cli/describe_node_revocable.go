package cli

import (
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
)

// nodeRevocable writes the node's last lending report (docs/policy.md, "Revocable
// capacity"): its bounds, what its non-revocable and revocable task groups use, and how
// old the report is (older than v4.RevocableStale: the node lends nothing).
func (d *describer) nodeRevocable(n *v4.Node) {
	r := n.Status.Revocable
	if r == nil {
		return
	}
	stale := ""
	if d.now.Sub(r.Time) > v4.RevocableStale {
		stale = ", stale: lends nothing"
	}
	d.kv("Revocable", "lends at most %.0f%% of the node above a %.0f%% margin; owners use %s cpu, %s; revocable use %s cpu, %s; %d evicted; reported %s ago%s",
		100*r.MaxFraction, 100*r.Margin, strconv.FormatFloat(r.UsedCPU, 'f', -1, 64), megabytes(r.UsedMemoryMB),
		strconv.FormatFloat(r.RevocableCPU, 'f', -1, 64), megabytes(r.RevocableMemoryMB), r.Evictions, age(r.Time, d.now), stale)
}
