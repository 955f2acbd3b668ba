package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

func newMaintenanceCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "maintenance on|off|status",
		Short: "Put the whole engine in maintenance: writes refused, nothing restarted",
		Long: "While the engine is in maintenance the server refuses every change with 423\n" +
			"(agents keep reporting, reads work) and the controllers restart nothing: an\n" +
			"instance that ends stays ended until maintenance is off. Use it while working on\n" +
			"the cluster itself (etcd, networks, many machines at once).",
		Example: "  berth maintenance on --reason \"etcd upgrade\"\n  berth maintenance status\n  berth maintenance off",
	}
	var reason string
	on := &cobra.Command{
		Use:   "on",
		Short: "Turn engine maintenance on",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return setMaintenance(cmd, o, true, reason) },
	}
	on.Flags().StringVar(&reason, "reason", "", "why (shown in every refusal)")
	off := &cobra.Command{
		Use:   "off",
		Short: "Turn engine maintenance off: writes and restarts resume",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return setMaintenance(cmd, o, false, "") },
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "Show whether the engine is in maintenance",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withFormatAndClient(cmd, func(ctx context.Context, c *client.Client, format outputFormat) error {
				e, err := c.Engine(ctx)
				if err != nil {
					return err
				}
				return printEngine(o, format, e)
			})
		},
	}
	cmd.AddCommand(on, off, status)
	return cmd
}

func setMaintenance(cmd *cobra.Command, o *options, on bool, reason string) error {
	return o.withFormatAndClient(cmd, func(ctx context.Context, c *client.Client, format outputFormat) error {
		e, err := c.SetMaintenance(ctx, on, reason)
		if err != nil {
			return err
		}
		return printEngine(o, format, e)
	})
}

func printEngine(o *options, format outputFormat, e v4.Engine) error {
	switch format {
	case outJSON, outYAML:
		return printStructured(o.out(), format, e)
	}
	state := "off"
	if e.Maintenance {
		state = "on"
	}
	line := "maintenance: " + state
	if !e.Since.IsZero() {
		line += " since " + e.Since.Local().Format(time.DateTime)
	}
	if e.Maintenance && e.Reason != "" {
		line += " (reason: " + e.Reason + ")"
	}
	_, err := fmt.Fprintln(o.out(), line)
	return err
}
