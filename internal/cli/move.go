package cli

import (
	"context"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

func newMoveCommand(o *options) *cobra.Command {
	var to string
	var force bool
	cmd := &cobra.Command{
		Use:   "move TASKGROUP",
		Short: "Move one instance to another node, starting the new one first",
		Long: "Move one instance (task group) of an application or process. berth starts a\n" +
			"replacement of the same index on NODE (or on any other node without --to), waits\n" +
			"until it runs and passes its health checks, then stops the old one gracefully.\n" +
			"Instances of stateful workloads (annotation berth.io/stateful: \"true\") move\n" +
			"only with --force.",
		Example: "  berth move 0.web.demo.berth.1732240000000000000 --to node-2 -n demo\n" +
			"  berth move 2.db.defaultGroup.berth.1732240000000000000 --force",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				res, err := c.MoveTaskGroup(ctx, o.namespace, args[0], to, force)
				if err != nil {
					return err
				}
				printStarted(o.out(), v4.KindTaskGroup, args[0], res, "moving")
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "node to move to (default: any other node the scheduler picks)")
	cmd.Flags().BoolVar(&force, "force", false, "move an instance of a stateful workload too")
	return cmd
}
