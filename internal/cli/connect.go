package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/internal/client"
)

// connect is how a command opens its call to the servers: the client of the resolved
// server and CA, and a context bounded by --request-timeout that the caller cancels.
func (o *options) connect(cmd *cobra.Command) (*client.Client, context.Context, context.CancelFunc, error) {
	c, err := o.client()
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := o.requestContext(cmd)
	return c, ctx, cancel, nil
}

// withClient runs fn with the parsed -o format, the client and its request context: the
// opening every command that calls the servers shares.
func (o *options) withClient(cmd *cobra.Command, fn func(ctx context.Context, c *client.Client, format outputFormat) error) error {
	format, err := o.format()
	if err != nil {
		return err
	}
	c, ctx, cancel, err := o.connect(cmd)
	if err != nil {
		return err
	}
	defer cancel()
	return fn(ctx, c, format)
}

// eachArg calls do for every argument in turn, printing "<what> <arg> <done>" after each:
// the revoke and delete commands of tokens and policies.
func (o *options) eachArg(cmd *cobra.Command, args []string, what, done string, do func(context.Context, *client.Client, string) error) error {
	return o.withClient(cmd, func(ctx context.Context, c *client.Client, _ outputFormat) error {
		for _, a := range args {
			if err := do(ctx, c, a); err != nil {
				return err
			}
			fmt.Fprintf(o.out(), "%s %s %s\n", what, a, done)
		}
		return nil
	})
}
