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
			if s.Freeze(node) {
				log.Info("node frozen", "node", node)
			}
		}
		f.Close()
	})
}

// newSimNodeLossCommand is `berth sim nodeloss`.
func newSimNodeLossCommand(o *options) *cobra.Command {
	var (
		node, freezeFile string
		timeout          time.Duration
	)
	cmd := &cobra.Command{
		Use:   "nodeloss",
		Short: "Freeze a simulated node and measure until its instances run elsewhere",
		Long: "Freeze --node (default: the node that runs the most instances) of simulators started\n" +
			"with --freeze-file: its agent stops at once, as if its machine died. Print how long the\n" +
			"cluster took to mark it Lost and to have each instance it ran Running on another node\n" +
			"(instances of processes that restart Always; berth sim load --restart-policy Always).",
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
			freeze := func(node string) error {
				f, err := os.OpenFile(freezeFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
				if err != nil {
					return err
				}
				if _, err := fmt.Fprintln(f, node); err != nil {
					f.Close()
					return err
				}
				return f.Close()
			}
			res, err := sim.NodeLoss(ctx, c, sim.NodeLossConfig{Node: node, Freeze: freeze, Timeout: timeout})
			if res != nil {
				fmt.Fprintln(o.out(), res)
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&node, "node", "", "the simulated node to freeze (default: the one that runs the most instances)")
	fl.StringVar(&freezeFile, "freeze-file", "", "the --freeze-file of the simulators")
	fl.DurationVar(&timeout, "timeout", 5*time.Minute, "give up when not every instance runs elsewhere by then")
	return cmd
}
