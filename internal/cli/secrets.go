package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/internal/client"
)

func newSecretsCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secrets",
		Short: "Manage the encryption of secrets at rest",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "rewrap",
		Short: "Encrypt every secret again with the first key of the encryption key file",
		Long: "Encrypt every secret stored in etcd again with the first key of the servers'\n" +
			"--encryption-key-file (POST /v1/encryption/rewrap), so an old key can be removed\n" +
			"from the key files afterwards. Secrets stored in plain text by an older berth are\n" +
			"encrypted too. Each value is rewritten only if it did not change meanwhile; run it\n" +
			"again to find none left. See docs/security.md, Rotating the key.",
		Example: "  berth secrets rewrap",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withFormatAndClient(cmd, func(ctx context.Context, c *client.Client, format outputFormat) error {
				res, err := c.RewrapSecrets(ctx)
				if err != nil {
					return err
				}
				if format == outJSON || format == outYAML {
					return printStructured(o.out(), format, res)
				}
				fmt.Fprintf(o.out(), "%d values encrypted again with key %s.\n", res.Rewrapped, res.Key)
				return nil
			})
		},
	})
	return cmd
}
