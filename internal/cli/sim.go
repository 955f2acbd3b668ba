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

	"github.com/berthhq/berth/internal/agent"
	"github.com/berthhq/berth/internal/sim"
)

// simFlags are the flags of `berth sim`.
type simFlags struct {
	servers   []string
	token     string
	tokenFile string
	nodes     int
	prefix    string
	dataDir   string
	ramp      time.Duration
	heartbeat time.Duration
	report    time.Duration
	minStart  time.Duration
	maxStart  time.Duration
	// runTime and exitCodes make the tasks exit (sim_tasks.go); fullAgents runs whole agents.
	runTime        time.Duration
	exitCodes      string
	fullAgents     bool
	followServices bool
	// freezeFile names nodes to freeze, a line each (sim_nodeloss.go).
	freezeFile string
	// agentLogLevel is the level from which the agents' own messages are logged.
	agentLogLevel string
	// gpus and gpuFile give every node cards (sim_gpus.go).
	gpus, gpuFile string
	// cpuProfile names a file for the simulator's own CPU profile (sim_profile.go).
	cpuProfile string
	// statsFile is where the simulator keeps its counts (sim_check.go).
	statsFile string
}

func newSimCommand(o *options) *cobra.Command {
	f := &simFlags{}
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Simulate many nodes in one process, to measure a cluster (benchmarks)",
		Long: "Run --nodes simulated nodes against the servers (docs/benchmarks.md). Each speaks the\n" +
			"agent protocol as an agent does (join, registration over mTLS, a heartbeat stream, the\n" +
			"task group watch, status reports) and runs nothing: its task groups go Running after\n" +
			"--min-start-delay to --max-start-delay (at once by default) and run until stopped or,\n" +
			"with --run-time, exit with a code drawn from --exit-codes. --full-agents (implied by\n" +
			"--follow-services and --gpus) runs a whole agent per node over fake drivers instead.\n" +
			"It prints how many nodes serve every few seconds, until Ctrl-C.",
		Example: "  berth sim --server 127.0.0.1:7470 --token-file /var/lib/berth/join-token --nodes 5000 --ramp 60s\n" +
			"  berth sim --server 127.0.0.1:7470 --token-file /var/lib/berth/join-token --nodes 4 --gpus 8:A100-80GB",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(f.servers) == 0 {
				return fmt.Errorf("give the API servers with --server")
			}
			cards, err := simGPUs(f.gpus, f.gpuFile)
			if err != nil {
				return err
			}
			codes, err := f.checkTasks(len(cards) > 0)
			if err != nil {
				return err
			}
			token, err := agentFlags{token: f.token, tokenFile: f.tokenFile}.joinToken(&agentFile{}, cmd.Flags().Changed, o)
			if err != nil {
				return err
			}
			dir := f.dataDir
			if dir == "" {
				if dir, err = os.MkdirTemp("", "berth-sim-"); err != nil {
					return err
				}
				defer os.RemoveAll(dir)
			}
			var agentLevel slog.Level
			if err := agentLevel.UnmarshalText([]byte(f.agentLogLevel)); err != nil {
				return fmt.Errorf("--agent-log-level %q: use debug, info, warn or error", f.agentLogLevel)
			}
			log := slog.New(slog.NewTextHandler(o.env.stderr, &slog.HandlerOptions{Level: min(agentLevel, slog.LevelInfo)}))
			agent.Version = Version
			s, err := sim.New(sim.Config{ServerURLs: f.servers, Token: token, CACertFile: o.caCert, Nodes: f.nodes, Prefix: f.prefix,
				DataDir: dir, Ramp: f.ramp, HeartbeatInterval: f.heartbeat, ReportInterval: f.report,
				MinStartDelay: f.minStart, MaxStartDelay: f.maxStart, RunTime: f.runTime, ExitCodes: codes, FullAgents: f.fullAgents, Logger: log,
				AgentLogLevel: agentLevel, AgentLogLevelSet: true, FollowServices: f.followServices, GPUs: cards})
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if f.cpuProfile != "" {
				stopProfile, err := startSimProfile(f.cpuProfile)
				if err != nil {
					return err
				}
				defer stopProfile()
			}
			return runSim(ctx, s, f, log, o)
		},
	}
	f.register(cmd)
	cmd.AddCommand(newSimLoadCommand(o), newSimNodeLossCommand(o), newSimCheckCommand(o), newSimDNSCommand(o))
	return cmd
}

// runSim runs the simulator until ctx ends, printing how many nodes serve every 5 s.
func runSim(ctx context.Context, s *sim.Sim, f *simFlags, log *slog.Logger, o *options) error {
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	if f.freezeFile != "" {
		go watchFreezeFile(ctx, f.freezeFile, s, log) // ends with ctx
	}
	if f.statsFile != "" {
		go writeSimStats(ctx, f.statsFile, s, log) // ends with ctx
	}
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			fmt.Fprintf(o.out(), "%s nodes serving: %d/%d, failed: %d\n", time.Now().Format(time.TimeOnly), s.Ready(), f.nodes, s.Failed())
		}
	}
}

// register declares the flags of `berth sim`.
func (f *simFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVar(&f.servers, "server", nil, "API server address; repeat it or give a comma list")
	fl.StringVar(&f.token, "token", "", "join token (agent role)")
	fl.StringVar(&f.tokenFile, "token-file", "", "file holding the join token")
	fl.IntVar(&f.nodes, "nodes", 100, fmt.Sprintf("how many nodes to simulate (at most %d)", sim.MaxNodes))
	fl.StringVar(&f.prefix, "prefix", sim.DefaultPrefix, "node names are PREFIX-00000, PREFIX-00001, ...")
	fl.StringVar(&f.dataDir, "data-dir", "", "directory of the nodes' data dirs (default: a temporary one, removed at the end)")
	fl.DurationVar(&f.ramp, "ramp", 0, "spread the nodes' starts over this time")
	fl.DurationVar(&f.heartbeat, "heartbeat", agent.DefaultHeartbeatInterval, "heartbeat interval")
	fl.DurationVar(&f.report, "report", agent.DefaultReportInterval, "periodic status report interval")
	fl.StringVar(&f.freezeFile, "freeze-file", "", "freeze each node named on a line of this file, as if its machine died (berth sim nodeloss writes it)")
	fl.StringVar(&f.agentLogLevel, "agent-log-level", "error", "log the agents' messages from this level: debug, info, warn or error")
	fl.DurationVar(&f.minStart, "min-start-delay", sim.DefaultMinStartDelay, "shortest time a task group takes to go Running (0 with --max-start-delay 0: at once)")
	fl.DurationVar(&f.maxStart, "max-start-delay", sim.DefaultMaxStartDelay, "longest time a task group takes to go Running")
	fl.DurationVar(&f.runTime, "run-time", 0, "a task group's tasks exit this long after they run, with a code from --exit-codes (0: they run until stopped)")
	fl.StringVar(&f.exitCodes, "exit-codes", "", "the exit codes of --run-time's exits and their weights, CODE:WEIGHT,... as 0:90,1:10 (default: all 0); exit 0 is Finish, others Failed")
	fl.BoolVar(&f.fullAgents, "full-agents", false, "run a whole agent per node (executor, data dir, local API, fake drivers), as --follow-services and --gpus do: far dearer")
	fl.BoolVar(&f.followServices, "follow-services", false, "every node follows the services and endpoints, as with the DNS server on, and the simulator logs how soon a ready instance reaches every node")
	fl.StringVar(&f.gpus, "gpus", "", "give every node COUNT cards of MODEL: COUNT:MODEL[:MEMORY], as 8:A100-80GB or 4:T4:16GiB (docs/gpus.md)")
	fl.StringVar(&f.cpuProfile, "cpu-profile", "", "write the simulator's own CPU profile to this file (go tool pprof FILE), from start to end")
	fl.StringVar(&f.statsFile, "stats-file", "", "keep the simulator's counts (nodes, task groups running, nodes frozen) in this JSON file, rewritten every second (berth sim check reads it)")
	fl.StringVar(&f.gpuFile, "gpu-file", "", "give every node the cards of this JSON or YAML list (model, memory, numaNode, links; docs/gpus.md)")
}
