package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/internal/ctxtime"
	"github.com/berthhq/berth/internal/sim"
)

// The cluster benchmark's check (docs/benchmarks.md, "Cluster benchmark"): `berth sim
// --stats-file F` keeps its counts in F, and `berth sim check --stats-file F...` compares
// them with what the server reports.

// statsEvery is how often a simulator rewrites its stats file.
const statsEvery = time.Second

// writeSimStats keeps path up to date with s's counts until ctx ends.
func writeSimStats(ctx context.Context, path string, s *sim.Sim, log *slog.Logger) {
	failed := false
	ctxtime.Every(ctx, statsEvery, func() {
		if err := sim.WriteStats(path, s.Stats()); err != nil && !failed {
			failed = true // once: it would fail every second
			log.Error("cannot write the stats file", "err", err)
		}
	})
}

// newSimCheckCommand is `berth sim check`.
func newSimCheckCommand(o *options) *cobra.Command {
	var (
		statsFiles, prefixes []string
		settle               time.Duration
	)
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check that the server reports what the simulators run",
		Long: "Compare the server with simulators started with --stats-file, and fail naming what\n" +
			"is wrong: every instance of the processes of the namespaces of --prefix (berth sim load's)\n" +
			"must exist exactly once and be Running; the server must have as many task groups Running\n" +
			"as the simulators run (within --settle, for the last reports: a difference that stays is a\n" +
			"status report lost); no node may be Lost but those frozen (berth sim nodeloss). It prints\n" +
			"what it found and a RESULT line of it as key=value.",
		Example: "  berth sim check --stats-file /tmp/sim0.json --stats-file /tmp/sim1.json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(statsFiles) == 0 {
				return fmt.Errorf("give the simulators' stats files with --stats-file")
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			stats := func() (sim.Stats, error) { return sim.ReadStats(statsFiles) }
			res, err := sim.Check(ctx, c, sim.CheckConfig{Prefixes: prefixes, Stats: stats, Settle: settle})
			if res != nil {
				fmt.Fprintln(o.out(), res)
				fmt.Fprintln(o.out(), "RESULT", res.Fields())
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&statsFiles, "stats-file", nil, "a simulator's --stats-file; repeat it or give a comma list")
	fl.StringSliceVar(&prefixes, "prefix", []string{"bench", "rest"}, "check the processes of the namespaces PREFIX-... (berth sim load --prefix)")
	fl.DurationVar(&settle, "settle", 30*time.Second, "how long the server's and the simulators' counts of running task groups may take to agree")
	return cmd
}
