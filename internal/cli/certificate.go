package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/atomicfile"
	"github.com/berthhq/berth/internal/client"
)

// `berth certificate` (docs/cli.md; docs/policy.md, "Admission webhooks"): a serving
// certificate of the cluster CA for a webhook, from a CSR the caller made (its key never
// leaves the caller), signed once an administrator approves the request.

type certSignFlags struct {
	csr, name, ttl, out string
	dns, ips            []string
	approve             bool
	wait                time.Duration
}

func newCertificateCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "certificate",
		Aliases: []string{"cert"},
		Short:   "Have the cluster CA sign a webhook's serving certificate",
	}
	var f certSignFlags
	sign := &cobra.Command{
		Use:   "sign --csr FILE [--dns NAME] [--ip ADDR]",
		Short: "Send a CSR (PEM, ECDSA) for approval; print or write the certificate once approved",
		Long: "Send a certificate signing request to the cluster CA for a webhook's serving certificate. " +
			"The names are --dns and --ip, else the CSR's; none may be a name of berth's own API. " +
			"An administrator approves it with `berth certificate approve NAME` (or --approve here); " +
			"--wait waits that long for the approval.",
		Example: "  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout hook.key -subj /CN=hook -out hook.csr\n" +
			"  berth certificate sign --csr hook.csr --dns hook.infra.example --approve --out hook.crt",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			csr, err := os.ReadFile(f.csr)
			if err != nil {
				return fmt.Errorf("--csr: %w", err)
			}
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				return signCertificate(ctx, o, c, f, string(csr))
			})
		},
	}
	fl := sign.Flags()
	fl.StringVar(&f.csr, "csr", "", "the PEM certificate signing request (ECDSA P-256 or P-384)")
	fl.StringVar(&f.name, "name", "", "name of the request (default: generated)")
	fl.StringSliceVar(&f.dns, "dns", nil, "DNS name the certificate serves (repeatable; default: the CSR's)")
	fl.StringSliceVar(&f.ips, "ip", nil, "IP address the certificate serves (repeatable; default: the CSR's)")
	fl.StringVar(&f.ttl, "ttl", "", "how long the certificate is valid (default: the server's certificate lifetime; at most 8760h)")
	fl.BoolVar(&f.approve, "approve", false, "approve it at once (needs admin on cluster)")
	fl.DurationVar(&f.wait, "wait", 0, "wait this long for an administrator's approval")
	fl.StringVar(&f.out, "out", "", "write the certificate here (default: standard output)")
	sign.MarkFlagRequired("csr")
	var out string
	approve := &cobra.Command{
		Use: "approve NAME", Short: "Approve (sign) a pending certificate request (admin on cluster)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				r, err := c.DecideCertificateRequest(ctx, args[0], true)
				if err != nil {
					return err
				}
				if out == "" {
					fmt.Fprintf(o.out(), "certificate request %s approved, expires %s\n", r.Name, r.Expires.UTC().Format(time.RFC3339))
					return nil
				}
				return writeCert(o, r, out)
			})
		},
	}
	approve.Flags().StringVar(&out, "out", "", "write the certificate here (default: say it was approved)")
	deny := &cobra.Command{
		Use: "deny NAME", Short: "Deny a pending certificate request (admin on cluster)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				_, err := c.DecideCertificateRequest(ctx, args[0], false)
				if err == nil {
					fmt.Fprintf(o.out(), "certificate request %s denied\n", args[0])
				}
				return err
			})
		},
	}
	cmd.AddCommand(sign, approve, deny, newCertListCommand(o))
	return cmd
}

// newCertListCommand is `berth certificate list`.
func newCertListCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use: "list", Aliases: []string{"ls"}, Short: "List the certificate requests", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withFormatAndClient(cmd, func(ctx context.Context, c *client.Client, format outputFormat) error {
				items, err := c.CertificateRequests(ctx)
				if err != nil {
					return err
				}
				now := o.env.now()
				return printList(o, format, items, []string{"NAME", "STATUS", "REQUESTER", "APPROVER", "NAMES", "AGE"}, func(r v4.CertificateRequest) []string {
					names := append(append([]string{}, r.DNSNames...), r.IPs...)
					return []string{r.Name, r.Status, orNone(r.Requester), orNone(r.Approver), fmt.Sprint(names), age(r.Created, now)}
				})
			})
		},
	}
}

func signCertificate(ctx context.Context, o *options, c *client.Client, f certSignFlags, csr string) error {
	r, err := c.CreateCertificateRequest(ctx, v4.CertificateRequest{Name: f.name, CSR: csr, DNSNames: f.dns, IPs: f.ips, TTL: f.ttl})
	if err != nil {
		return err
	}
	if f.approve {
		if r, err = c.DecideCertificateRequest(ctx, r.Name, true); err != nil {
			return fmt.Errorf("certificate request %s was made; approving it: %w", r.Name, err)
		}
	}
	deadline := time.Now().Add(f.wait)
	for r.Status == v4.CertPending && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		if r, err = c.CertificateRequest(ctx, r.Name); err != nil {
			return err
		}
	}
	switch r.Status {
	case v4.CertPending:
		fmt.Fprintf(o.out(), "certificate request %s is pending: an administrator approves it with `berth certificate approve %s`\n", r.Name, r.Name)
		return nil
	case v4.CertDenied:
		return fmt.Errorf("certificate request %s was denied by %s", r.Name, r.Approver)
	}
	return writeCert(o, r, f.out)
}

// writeCert writes an approved request's certificate to path, or to standard output.
func writeCert(o *options, r *v4.CertificateRequest, path string) error {
	if path == "" {
		fmt.Fprint(o.out(), r.Certificate)
		return nil
	}
	if err := atomicfile.Write(path, []byte(r.Certificate), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	fmt.Fprintf(o.out(), "certificate request %s approved: %s, expires %s\n", r.Name, path, r.Expires.UTC().Format(time.RFC3339))
	return nil
}
