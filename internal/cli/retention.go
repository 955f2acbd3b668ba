package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/internal/daemon"
)

// retentionFlags say how long the server keeps what the cluster did: events, and
// finished workflows as objects and in the workflow archive (docs/workflows.md, "The
// workflow archive"; docs/operations.md, "Events").
type retentionFlags struct {
	eventTTL       time.Duration
	wfArchiveAfter time.Duration
	wfArchiveTTL   time.Duration
}

// Defaults and bounds of the retention flags. An event lives one --event-ttl after it was
// last seen (kube-apiserver's --event-ttl, whose default this is).
const (
	defaultEventTTL       = time.Hour
	minEventTTL           = time.Minute
	maxEventTTL           = 7 * 24 * time.Hour
	defaultWfArchiveAfter = time.Hour
	maxRetention          = 8784 * time.Hour // a leap year
)

func (r *retentionFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.DurationVar(&r.eventTTL, "event-ttl", defaultEventTTL, "how long an event is kept after it was last seen (1m to 168h)")
	fl.DurationVar(&r.wfArchiveAfter, "workflow-archive-after", defaultWfArchiveAfter,
		"how long after its end a finished workflow moves into the workflow archive (0: none is archived)")
	fl.DurationVar(&r.wfArchiveTTL, "workflow-archive-ttl", 0,
		"how long an archived workflow is kept (0: until it is deleted, or its ttlStrategy says)")
}

func (r retentionFlags) check() error {
	if r.eventTTL < minEventTTL || r.eventTTL > maxEventTTL {
		return fmt.Errorf("--event-ttl %s: must be between %s and %s", r.eventTTL, minEventTTL, maxEventTTL)
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"--workflow-archive-after", r.wfArchiveAfter}, {"--workflow-archive-ttl", r.wfArchiveTTL}} {
		if f.d < 0 || f.d > maxRetention {
			return fmt.Errorf("%s %s: must be between 0 and %s", f.name, f.d, maxRetention)
		}
	}
	return nil
}

func (r retentionFlags) workflowArchive() daemon.WorkflowArchive {
	return daemon.WorkflowArchive{After: r.wfArchiveAfter, TTL: r.wfArchiveTTL}
}
