package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/internal/sim"
)

// newSimLoadCommand is `berth sim load`: a burst of submissions through the API, followed
// until every instance runs (docs/benchmarks.md, "Cluster benchmark").
func newSimLoadCommand(o *options) *cobra.Command {
	var cfg sim.LoadConfig
	cmd := &cobra.Command{
		Use:   "load",
		Short: "Submit --apps processes of --instances instances and measure them until they run",
		Long: "Apply --apps processes of --instances instances each (0.01 core and 8 MB an instance)\n" +
			"through the API, watch their task groups, and print placements per second, submit ->\n" +
			"Running percentiles and the API's latency during the burst, then a RESULT line of them\n" +
			"as key=value. It fails when an instance is missing, twice or not Running as the server\n" +
			"reports it once the watch saw them all run, or when a node was marked Lost meanwhile.\n" +
			"Use it against simulated nodes (berth sim); it needs a token that may write processes.",
		Example: "  berth sim load --apps 100 --instances 100",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			res, err := sim.Load(ctx, c, cfg)
			if res != nil {
				fmt.Fprintln(o.out(), res)
				fmt.Fprintln(o.out(), "RESULT", res.Fields())
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Apps, "apps", 100, "how many processes to submit")
	fl.IntVar(&cfg.Instances, "instances", 100, fmt.Sprintf("instances of each (at most %d in all)", sim.MaxLoadInstances))
	fl.IntVar(&cfg.Namespaces, "namespaces", 1, "spread the processes over this many namespaces (0: one each)")
	fl.IntVar(&cfg.Concurrency, "concurrency", 4, "applies in flight")
	fl.DurationVar(&cfg.Pace, "pace", 0, "time between two applies (a cluster at rest, one process at a time) instead of a burst")
	fl.StringVar(&cfg.Prefix, "prefix", "bench", "the namespaces' names start with it and the time (berth sim --follow-services reports each prefix apart)")
	fl.DurationVar(&cfg.Timeout, "timeout", 10*time.Minute, "give up when not every instance runs by then")
	fl.StringVar(&cfg.RestartPolicy, "restart-policy", "", "the processes' restart policy (Always replaces the instances of a lost node; default OnFailure)")
	fl.BoolVar(&cfg.Services, "services", false, "apply a service with each process, selecting its instances (berth sim --follow-services measures how soon they reach every node)")
	return cmd
}
