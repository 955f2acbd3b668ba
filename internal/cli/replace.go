package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// newReplaceCommand is berth replace: the replace operation of docs/lifecycle.md,
// "Replacing instances".
func newReplaceCommand(o *options) *cobra.Command {
	var instances int
	var force bool
	cmd := &cobra.Command{
		Use:   "replace KIND NAME",
		Short: "Replace the instances of an application or process that run an older template",
		Long: "Replace, one after another, the instances that do not run the stored pod template:\n" +
			"each by a move to any node, its own included, the replacement started first. An\n" +
			"update only changes what new instances run; this brings the running ones to it, as\n" +
			"BCS's update relaunched its first ?instances=N. Instances stopped on purpose stay\n" +
			"stopped. --instances N replaces the first N only.",
		Example: "  berth replace process web -n demo\n  berth replace app web --instances 2",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, err := v4.ParseKind(args[0])
			if err != nil {
				return err
			}
			if kind != v4.KindApplication && kind != v4.KindProcess {
				return fmt.Errorf("%s have no instances to replace: only applications and processes do (a deployment rolls its own)", kind.Plural())
			}
			req := v4.ReplaceRequest{Force: force}
			if cmd.Flags().Changed("instances") {
				if instances < 0 || instances > v4.MaxInstances {
					return fmt.Errorf("--instances must be between 0 and %d, got %d", v4.MaxInstances, instances)
				}
				req.Instances = &instances
			}
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				res, err := c.Operate(ctx, kind, o.namespace, args[1], "replace", nil, req)
				if err != nil {
					return err
				}
				printStarted(o.out(), kind, args[1], res, "every instance runs the stored template: nothing to replace")
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&instances, "instances", 0, "replace the first N instances only (every one by default)")
	cmd.Flags().BoolVar(&force, "force", false, "replace the instances of a stateful workload too")
	return cmd
}
