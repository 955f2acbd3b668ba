package cli

import (
	"context"

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
