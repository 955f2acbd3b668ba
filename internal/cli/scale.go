package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

func newScaleCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "scale KIND NAME INSTANCES",
		Short: "Change the instance count of an application, process or deployment",
		Long: "Change spec.instance. Scaling up adds the next indexes; scaling down stops the\n" +
			"highest indexes (BCS semantics). 0 stops every instance and keeps the object, its\n" +
			"history and its services (phase Stopped); scaling up again starts them anew.",
		Example: "  berth scale process web 5 -n demo\n  berth scale app web 2\n  berth scale deployment api 0",
		Args:    cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, err := v4.ParseKind(args[0])
			if err != nil {
				return err
			}
			n, err := strconv.Atoi(args[2])
			if err != nil || n < 0 {
				return fmt.Errorf("INSTANCES must be a whole number, 0 or more (0 stops every instance), got %q", args[2])
			}
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				res, err := c.Operate(ctx, kind, o.namespace, args[1], "scale", nil, map[string]int{"instances": n})
				if err != nil {
					return err
				}
				printStarted(o.out(), kind, args[1], res, fmt.Sprintf("scaled to %d", n))
				return nil
			})
		},
	}
}
