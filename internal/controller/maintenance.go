package controller

import (
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// Engine maintenance (docs/maintenance.md): while it is on, controllers restart nothing.
// They read the flag through store.InMaintenance, which caches it for a second.

// maintenanceRecheck is how often a held restart looks at the flag again, so restarts
// resume soon after maintenance is turned off (no event wakes an ended task group).
const maintenanceRecheck = 5 * time.Second

// maintenanceReason is the operator's reason, or a placeholder.
func maintenanceReason(e v4.Engine) string {
	if e.Reason == "" {
		return "no reason given"
	}
	return "reason: " + e.Reason
}
