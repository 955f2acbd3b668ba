package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// drainPoll is how often --wait looks at the node besides following its events, in case
// the event stream breaks.
const drainPoll = 5 * time.Second

func newDrainCommand(o *options) *cobra.Command {
	var force, wait bool
	cmd := &cobra.Command{
		Use:   "drain NODE",
		Short: "Disable a node and move its instances off it, one at a time",
		Long: "Disable NODE (no new placements) and move every application and process\n" +
			"instance off it, one at a time: each move starts the replacement elsewhere and\n" +
			"waits for it to run and pass its health checks before the old one stops and the\n" +
			"next move begins. Instances of stateful workloads stay unless --force; daemonset\n" +
			"and dependency task groups stay. The node stays disabled afterwards: run\n" +
			"`berth node enable NODE` to use it again (enabling it during a drain cancels it).",
		Example: "  berth drain node-1 --wait\n  berth drain node-1 --force",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			c, err := o.client()
			if err != nil {
				return err
			}
			ctx, stop := context.WithCancel(cmdContext(cmd))
			defer stop()
			var events <-chan client.EventWatch
			if wait { // follow the node's events from before the drain starts: none is missed
				if events, err = c.WatchEvents(ctx, v4.EventFilter{Kind: v4.KindNode, Name: name}); err != nil {
					return err
				}
			}
			reqCtx, cancel := o.requestContext(cmd)
			defer cancel()
			res, err := c.DrainNode(reqCtx, name, force)
			if err != nil {
				return err
			}
			printStarted(o.out(), v4.KindNode, name, res, "draining")
			if !wait {
				return nil
			}
			return waitDrain(ctx, o, c, name, events)
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "move instances of stateful workloads too")
	cmd.Flags().BoolVar(&wait, "wait", false, "print the progress and return when the drain has ended")
	return cmd
}

// waitDrain prints the node's drain events until the drain ends: nil when drained, an
// ExitError when it was cancelled.
func waitDrain(ctx context.Context, o *options, c *client.Client, node string, events <-chan client.EventWatch) error {
	tick := time.NewTicker(drainPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-events:
			if !ok || ev.Err != nil {
				events = nil // the stream broke: polling alone finds the end
				continue
			}
			if done, err := drainEvent(o, ev.Event); done {
				return err
			}
		case <-tick.C:
			n, err := c.Node(ctx, node)
			if err != nil {
				return err
			}
			if _, draining := n.Metadata.Annotations[v4.DrainAnnotation]; draining {
				continue
			}
			return drainOutcome(ctx, o, c, node)
		}
	}
}

// drainEvent prints one event of the node; done reports the end of the drain.
func drainEvent(o *options, ev v4.Event) (done bool, err error) {
	switch ev.Reason {
	case "DrainMoving", "DrainSkipped", "DrainBlocked", "DrainPaused":
		fmt.Fprintf(o.out(), "  %s: %s\n", ev.Reason, ev.Message)
	case "Drained":
		fmt.Fprintf(o.out(), "%s\n", ev.Message)
		return true, nil
	case "DrainCancelled":
		return true, &ExitError{Code: 1, Message: ev.Message}
	}
	return false, nil
}

// drainOutcome reads how the drain that just ended ended, from the node's last events.
func drainOutcome(ctx context.Context, o *options, c *client.Client, node string) error {
	evs, err := c.Events(ctx, v4.EventFilter{Kind: v4.KindNode, Name: node})
	if err != nil {
		return err
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if done, err := drainEvent(o, evs[i]); done {
			return err
		}
	}
	fmt.Fprintf(o.out(), "drain of node %s ended\n", node)
	return nil
}
