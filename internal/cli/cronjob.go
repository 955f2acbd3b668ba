package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// newCronCommand is `berth cronjob` or `berth cronworkflow` (kind): what is done to
// a cron object besides get, describe and apply.
func newCronCommand(o *options, kind v4.Kind) *cobra.Command {
	runs := "jobs"
	if kind == v4.KindCronWorkflow {
		runs = "workflows"
	}
	cmd := &cobra.Command{
		Use:   string(kind),
		Short: fmt.Sprintf("Act on %ss: the %s they start on a schedule (docs/cron.md)", kind, runs),
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "trigger NAME",
		Short: fmt.Sprintf("Start a run of a %s now, outside its schedule", kind),
		Long: fmt.Sprintf("Start a run of a %s now, whatever its schedule, suspend and concurrencyPolicy\n"+
			"(as `kubectl create job --from=cronjob/NAME`); lastScheduleTime does not move. The run\n"+
			"is named NAME-m<time>, counts in the active list and the history, and is written\n"+
			"as yours: you need the right to write %s and the privileges its pods ask for.", kind, runs),
		Example: fmt.Sprintf("  berth %s trigger nightly -n ml", kind),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := strings.TrimPrefix(args[0], string(kind)+"/")
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				run, err := c.Trigger(ctx, kind, o.namespace, name)
				if err != nil {
					return err
				}
				fmt.Fprintf(o.out(), "%s/%s created from %s/%s\n", run.GetKind(), run.GetMeta().Name, kind, name)
				return nil
			})
		},
	})
	return cmd
}
