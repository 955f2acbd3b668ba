package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// instanceActing is what the answer of berth stop and start says the instance does.
var instanceActing = map[string]string{"stop": "stopping", "start": "starting"}

// newInstanceCommand is berth stop or berth start (action): one instance of an
// application, process or deployment, or every one (docs/lifecycle.md, "Stopped
// instances").
func newInstanceCommand(o *options, action string) *cobra.Command {
	short := map[string]string{
		"stop":  "Stop one instance (or all) of an application, process or deployment, keeping its count",
		"start": "Start again an instance (or all) stopped with berth stop",
	}[action]
	long := map[string]string{
		"stop": "Stop an instance on purpose: its tasks are stopped gracefully (killPolicy) and nothing\n" +
			"restarts or replaces it (restart policy, node loss, drain, rollouts) until berth start.\n" +
			"The instance count still counts it; its task group stays on its node, ended, and the\n" +
			"status says how many instances are stopped. INDEX is the instance's index (berth get\n" +
			"taskgroups shows it), or all.",
		"start": "Start an instance stopped with berth stop: a new run is placed on the node it ran on\n" +
			"when it fits there, anywhere else when not. INDEX is the instance's index, or all.",
	}[action]
	return &cobra.Command{
		Use:     action + " KIND NAME INDEX",
		Short:   short,
		Long:    long,
		Example: fmt.Sprintf("  berth %[1]s process web 1 -n demo\n  berth %[1]s deployment api all", action),
		Args:    cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, err := v4.ParseKind(args[0])
			if err != nil {
				return err
			}
			if kind != v4.KindApplication && kind != v4.KindProcess && kind != v4.KindDeployment {
				return fmt.Errorf("%s have no numbered instances: only applications, processes and deployments do", kind.Plural())
			}
			index, which := args[2], "instance "+args[2]
			if index == "all" {
				which = "every instance"
			} else if n, err := strconv.Atoi(index); err != nil || n < 0 {
				return fmt.Errorf("INDEX must be an instance's index (a whole number from 0) or all, got %q", index)
			}
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				res, err := c.Operate(ctx, kind, o.namespace, args[1], "instances/"+index+"/"+action, nil, nil)
				if err != nil {
					return err
				}
				printStarted(o.out(), kind, args[1], res, which+" "+instanceActing[action])
				return nil
			})
		},
	}
}
