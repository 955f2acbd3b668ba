package cli

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/internal/ctxtime"
	"github.com/berthhq/berth/internal/daemon"
	"github.com/berthhq/berth/internal/sim"
)

// Node loss (docs/benchmarks.md, "Cluster benchmark"): `berth sim --freeze-file F` freezes
// each node named on a line of F, and `berth sim nodeloss` appends a node's name to F and
// measures until the node's instances run elsewhere.

// freezeFilePoll is how often the simulator reads its freeze file.
const freezeFilePoll = 100 * time.Millisecond

// watchFreezeFile freezes the nodes named in path as their names appear, until ctx ends.
func watchFreezeFile(ctx context.Context, path string, s *sim.Sim, log *slog.Logger) {
	frozen := map[string]bool{}
	ctxtime.Every(ctx, freezeFilePoll, func() {
		f, err := os.Open(path)
		if err != nil {
			return // not written yet
		}
		lines := bufio.NewScanner(f)
		for lines.Scan() {
			node := strings.TrimSpace(lines.Text())
			if node == "" || frozen[node] {
				continue
			}
			frozen[node] = true
			if fn, ok := s.FreezeNode(node); ok {
				log.Info("node frozen", "node", node, "lastBeat", fn.LastBeat, "interval", fn.Interval)
				if err := sim.AppendFrozen(path, fn); err != nil {
					log.Error("cannot say the node froze", "node", node, "err", err)
				}
			}
		}
		f.Close()
	})
}

// newSimNodeLossCommand is `berth sim nodeloss`.
func newSimNodeLossCommand(o *options) *cobra.Command {
	var (
		node, freezeFile              string
		timeout, nodeTTL, maxAfterTTL time.Duration
	)
	cmd := &cobra.Command{
		Use:   "nodeloss",
		Short: "Freeze a simulated node and measure until its instances run elsewhere",
		Long: "Freeze --node (default: the node that runs the most instances) of simulators started\n" +
			"with --freeze-file: its agent stops at once, as if its machine died. Print how long the\n" +
			"cluster took to mark it Lost and to have each instance it ran Running on another node\n" +
			"(instances of processes that restart Always; berth sim load --restart-policy Always),\n" +
			"the node's TTL (of the interval the server told it, and --node-ttl) and the time from\n" +
			"its expiry, after the node's last beat, to the last replacement Running.",
		Example: "  berth sim nodeloss --freeze-file /tmp/freeze",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if freezeFile == "" {
				return fmt.Errorf("give the simulators' freeze file with --freeze-file")
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			freeze := func(node string) (sim.FrozenNode, error) {
				f, err := os.OpenFile(freezeFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
				if err != nil {
					return sim.FrozenNode{}, err
				}
				if _, err := fmt.Fprintln(f, node); err != nil {
					f.Close()
					return sim.FrozenNode{}, err
				}
				if err := f.Close(); err != nil {
					return sim.FrozenNode{}, err
				}
				// The simulator reads the file every freezeFilePoll and answers.
				wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				return sim.WaitFrozen(wctx, freezeFile, node)
			}
			res, err := sim.NodeLoss(ctx, c, sim.NodeLossConfig{Node: node, Freeze: freeze, NodeTTL: nodeTTL, MaxAfterTTL: maxAfterTTL, Timeout: timeout})
			if res != nil {
				fmt.Fprintln(o.out(), res)
				fmt.Fprintln(o.out(), "RESULT", res.Fields())
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&node, "node", "", "the simulated node to freeze (default: the one that runs the most instances)")
	fl.StringVar(&freezeFile, "freeze-file", "", "the --freeze-file of the simulators")
	fl.DurationVar(&timeout, "timeout", 5*time.Minute, "give up when not every instance runs elsewhere by then")
	fl.DurationVar(&nodeTTL, "node-ttl", daemon.DefaultNodeTTL, "the server's --node-ttl, from which its TTL of the node follows")
	fl.DurationVar(&maxAfterTTL, "max-after-ttl", 0, "fail when the last replacement runs more than this after the node's TTL expired (0: no bound)")
	return cmd
}
