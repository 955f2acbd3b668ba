package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// newTokenCommand manages join tokens (docs/security.md, Join tokens).
func newTokenCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and revoke the join tokens agents and servers join with",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newTokenCreateCommand(o), newTokenListCommand(o), newTokenRevokeCommand(o))
	return cmd
}

func newTokenCreateCommand(o *options) *cobra.Command {
	var req v4.JoinTokenRequest
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a join token and print it (once: the cluster keeps only its hash)",
		Long: "Create a join token. The printed token carries the cluster CA's hash, so an agent\n" +
			"given it verifies the servers on first contact. An agent token joins nodes; a server\n" +
			"token also joins servers, which receive the cluster's CA and encryption keys.",
		Example: "  berth token create --ttl 24h --description 'rack 12'\n" +
			"  berth token create --node web-3   # web-3's agent lost its data dir and joins again\n" +
			"  berth agent --server 10.0.0.1:7470 --token \"$(berth token create -o name)\"",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withFormatAndClient(cmd, func(ctx context.Context, c *client.Client, format outputFormat) error {
				t, err := c.CreateJoinToken(ctx, req)
				if err != nil {
					return err
				}
				expires := "never expires"
				if !t.Expires.IsZero() {
					expires = "expires " + t.Expires.Local().Format(time.RFC3339)
				}
				return printSecretOnce(o, format, t, t.Token, fmt.Sprintf("%s token %s, %s.", t.Role, t.ID, expires))
			})
		},
	}
	create.Flags().StringVar(&req.TTL, "ttl", "24h", "how long the token works (0: never expires)")
	create.Flags().StringVar(&req.Role, "role", "agent", "agent (joins nodes) or server (joins nodes and servers)")
	create.Flags().StringVar(&req.Description, "description", "", "what the token is for")
	create.Flags().StringVar(&req.Node, "node", "", "join only this node name, even one an existing node holds (an agent that lost its data dir joins it again)")
	return create
}

func newTokenListCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the join tokens with their role and expiry (never their secrets)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withFormatAndClient(cmd, func(ctx context.Context, c *client.Client, format outputFormat) error {
				toks, err := c.JoinTokens(ctx)
				if err != nil {
					return err
				}
				now := o.env.now()
				return printList(o, format, toks, []string{"ID", "ROLE", "EXPIRES", "AGE", "DESCRIPTION"}, func(t v4.JoinTokenInfo) []string {
					expires := "never"
					switch {
					case t.Expired:
						expires = "expired"
					case !t.Expires.IsZero():
						expires = "in " + humanDuration(t.Expires.Sub(now))
					}
					return []string{t.ID, t.Role, expires, age(t.Created, now), orNone(t.Description)}
				})
			})
		},
	}
}

func newTokenRevokeCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID...",
		Short: "Revoke join tokens: nothing can join with them any more (joined nodes keep their certificates)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.eachArg(cmd, args, "join token", "revoked", func(ctx context.Context, c *client.Client, a string) error { return c.RevokeJoinToken(ctx, a) })
		},
	}
}
