package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/internal/client"
)

// withClient runs fn with the client of the resolved server and CA and a context bounded
// by --request-timeout, cancelled when fn returns: the opening every command that calls
// the servers shares.
func (o *options) withClient(cmd *cobra.Command, fn func(ctx context.Context, c *client.Client) error) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	ctx, cancel := o.requestContext(cmd)
	defer cancel()
	return fn(ctx, c)
}

// withFormatAndClient is withClient for the commands that print with -o: the format is
// parsed first, so a bad -o is refused before any server is resolved.
func (o *options) withFormatAndClient(cmd *cobra.Command, fn func(ctx context.Context, c *client.Client, format outputFormat) error) error {
	format, err := o.format()
	if err != nil {
		return err
	}
	return o.withClient(cmd, func(ctx context.Context, c *client.Client) error { return fn(ctx, c, format) })
}

// eachArg calls do for every argument in turn, printing "<what> <arg> <done>" after each:
// the revoke and delete commands of tokens and policies.
func (o *options) eachArg(cmd *cobra.Command, args []string, what, done string, do func(context.Context, *client.Client, string) error) error {
	return o.withFormatAndClient(cmd, func(ctx context.Context, c *client.Client, _ outputFormat) error {
		for _, a := range args {
			if err := do(ctx, c, a); err != nil {
				return err
			}
			fmt.Fprintf(o.out(), "%s %s %s\n", what, a, done)
		}
		return nil
	})
}
