package cli

import (
	"time"

	"github.com/berthhq/berth/internal/agent"
	"github.com/spf13/cobra"
)

// agentRevocableFlags bound what the node lends to the revocable tier (docs/policy.md,
// "Revocable capacity"; docs/agent.md).
type agentRevocableFlags struct {
	maxFraction, margin     float64
	interval, evictInterval time.Duration
}

// Conservative defaults: a quarter of the node at most, a tenth kept back.
const (
	defaultRevocableMaxFraction = 0 // lending is the operator's choice: a lending node writes its report every 20 s
	defaultRevocableMargin      = 0.1
)

func (f *agentRevocableFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.Float64Var(&f.maxFraction, "revocable-max-fraction", defaultRevocableMaxFraction, "the most the node lends to the revocable tier out of idle reservations, as a share of its allocatable cpu and memory (0 lends nothing)")
	fl.Float64Var(&f.margin, "revocable-margin", defaultRevocableMargin, "the share of the node's allocatable kept back above the owners' measured use before anything is lent; also the memory headroom below which revocable task groups are evicted")
	fl.DurationVar(&f.interval, "revocable-interval", agent.DefaultRevocableInterval, "how often the node's pods are measured for the revocable tier (lending report, evictions)")
	fl.DurationVar(&f.evictInterval, "revocable-evict-interval", agent.DefaultRevocableEvictInterval, "the least time between two evictions of revocable task groups on the node")
}

// apply puts the flags, or the config file's keys where a flag was not given, into cfg.
func (f *agentRevocableFlags) apply(cfg *agent.Config, file *agentFile, changed func(string) bool) {
	cfg.RevocableMaxFraction, cfg.RevocableMargin = f.maxFraction, f.margin
	cfg.RevocableInterval, cfg.RevocableEvictInterval = f.interval, f.evictInterval
	if !changed("revocable-max-fraction") && file.RevocableMaxFraction != nil {
		cfg.RevocableMaxFraction = *file.RevocableMaxFraction
	}
	if !changed("revocable-margin") && file.RevocableMargin != nil {
		cfg.RevocableMargin = *file.RevocableMargin
	}
	if !changed("revocable-interval") && file.RevocableInterval > 0 {
		cfg.RevocableInterval = file.RevocableInterval
	}
	if !changed("revocable-evict-interval") && file.RevocableEvictInterval > 0 {
		cfg.RevocableEvictInterval = file.RevocableEvictInterval
	}
}
