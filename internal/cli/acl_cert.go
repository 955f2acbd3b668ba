package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/atomicfile"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/pki"
)

// Users' client certificates (docs/security.md, "Client certificates"): for a client that
// cannot send a token (Lain's console behind a TLS proxy, docs/migrate-from-deployd.md),
// the CLI makes a key here, sends only its certificate request, and writes the key, the
// certificate bound to the token and the cluster CA next to each other.

// certFiles are the files of a user's certificate written for prefix.
type certFiles struct{ cert, key, ca string }

func certFilesOf(prefix string) certFiles {
	return certFiles{cert: prefix + ".crt", key: prefix + ".key", ca: prefix + "-ca.crt"}
}

// issueClientCert makes a key, has the server certify it for the token id and writes the
// files of prefix: the key 0600, the certificate and the CA 0644.
func issueClientCert(ctx context.Context, c *client.Client, id, prefix, ttl string) (*v4.ACLCertificate, certFiles, error) {
	files := certFilesOf(prefix)
	if dir := filepath.Dir(prefix); dir != "." {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return nil, files, fmt.Errorf("--client-cert %s: the directory %s does not exist", prefix, dir)
		}
	}
	csrPEM, keyPEM, err := pki.NewCSR(id)
	if err != nil {
		return nil, files, err
	}
	ans, err := c.CreateACLCertificate(ctx, id, v4.ACLCertificateRequest{CSR: string(csrPEM), TTL: ttl})
	if err != nil {
		return nil, files, fmt.Errorf("client certificate of %s: %w", id, err)
	}
	for _, f := range []struct {
		path string
		data []byte
		perm os.FileMode
	}{{files.key, keyPEM, 0o600}, {files.cert, []byte(ans.Certificate), 0o644}, {files.ca, []byte(ans.CA), 0o644}} {
		if err := atomicfile.Write(f.path, f.data, f.perm); err != nil {
			return nil, files, fmt.Errorf("write %s: %w", f.path, err)
		}
	}
	return ans, files, nil
}

func printCertFiles(w io.Writer, ans *v4.ACLCertificate, files certFiles) {
	fmt.Fprintf(w, "client certificate of %s: %s (key %s, 0600; cluster CA %s), expires %s.\n",
		ans.Token, files.cert, files.key, files.ca, ans.Expires.UTC().Format("2006-01-02T15:04:05Z"))
	fmt.Fprintln(w, "It works while the token does: revoking the token ends it at once.")
}

// newACLTokenCertCommand issues a client certificate for an existing token.
func newACLTokenCertCommand(o *options) *cobra.Command {
	var prefix, ttl string
	cmd := &cobra.Command{
		Use:   "certificate ID --out PREFIX",
		Short: "Issue a client certificate bound to a token (PREFIX.crt, PREFIX.key, PREFIX-ca.crt)",
		Long: "Issue a client certificate that authenticates as the token, for clients that cannot send a token " +
			"(a TLS proxy in front of Lain's console). The key is made here and never sent. The certificate " +
			"works while the token does, and never past its expiry; a management token cannot have one.",
		Example: "  berth acl token certificate berth-acl-k2v9xq --out lain-console --ttl 2160h",
		Aliases: []string{"cert"},
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				ans, files, err := issueClientCert(ctx, c, args[0], prefix, ttl)
				if err != nil {
					return err
				}
				printCertFiles(o.out(), ans, files)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&prefix, "out", "", "where to write the files: PREFIX.crt, PREFIX.key and PREFIX-ca.crt")
	cmd.Flags().StringVar(&ttl, "ttl", "", "how long the certificate is valid (default: the cluster's certificate lifetime; never past the token)")
	cmd.MarkFlagRequired("out")
	return cmd
}
