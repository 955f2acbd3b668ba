package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/client"
)

// newACLCommand manages users' tokens and policies (docs/security.md, Users and policies).
func newACLCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{Use: "acl", Short: "Manage users' tokens and the policies they carry", Args: cobra.NoArgs}
	cmd.AddCommand(newACLTokenCommand(o), newACLPolicyCommand(o))
	return cmd
}

func newACLTokenCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Create, list and revoke users' tokens", Args: cobra.NoArgs}
	var req v4.ACLTokenRequest
	var certPrefix, certTTL string
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a token carrying policies, and print it (once)",
		Example: "  berth acl token create --name ci --policy deployer --ttl 720h\n" +
			"  berth acl token create --name lain-console --policy lain-console --client-cert lain-console",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if certPrefix != "" && req.Management {
				return fmt.Errorf("--client-cert: a management token cannot have a client certificate; give the token policies")
			}
			return o.withFormatAndClient(cmd, func(ctx context.Context, c *client.Client, format outputFormat) error {
				t, err := c.CreateACLToken(ctx, req)
				if err != nil {
					return err
				}
				if err := printSecretOnce(o, format, t, t.Secret, fmt.Sprintf("token %s (%s).", t.ID, grants(t))); err != nil || certPrefix == "" {
					return err
				}
				ans, files, err := issueClientCert(ctx, c, t.ID, certPrefix, certTTL)
				if err != nil {
					return err
				}
				printCertFiles(o.env.stderr, ans, files)
				return nil
			})
		},
	}
	create.Flags().StringVar(&certPrefix, "client-cert", "", "also issue a client certificate bound to the token: PREFIX.crt, PREFIX.key, PREFIX-ca.crt")
	create.Flags().StringVar(&certTTL, "cert-ttl", "", "how long the client certificate is valid (default: the cluster's certificate lifetime; never past the token)")
	create.Flags().StringVar(&req.Name, "name", "", "what the token is for")
	create.Flags().StringSliceVar(&req.Policies, "policy", nil, "policies the token carries (repeat or comma separate)")
	create.Flags().BoolVar(&req.Management, "management", false, "a management token: every right")
	create.Flags().StringVar(&req.TTL, "ttl", "", "how long the token works (default: never expires)")
	list := &cobra.Command{
		Use: "list", Aliases: []string{"ls"}, Short: "List the tokens (never their secrets)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withFormatAndClient(cmd, func(ctx context.Context, c *client.Client, format outputFormat) error {
				toks, err := c.ACLTokens(ctx)
				if err != nil {
					return err
				}
				now := o.env.now()
				return printList(o, format, toks, []string{"ID", "NAME", "GRANTS", "EXPIRES", "AGE"}, func(t v4.ACLTokenInfo) []string {
					expires := "never"
					if !t.Expires.IsZero() {
						expires = humanDuration(t.Expires.Sub(now))
						if !t.Expires.After(now) {
							expires = "expired"
						}
					}
					return []string{t.ID, orNone(t.Name), grants(&t), expires, age(t.Created, now)}
				})
			})
		},
	}
	revoke := &cobra.Command{
		Use: "revoke ID...", Short: "Revoke tokens: they stop working within a second", Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.eachArg(cmd, args, "token", "revoked", func(ctx context.Context, c *client.Client, a string) error { return c.RevokeACLToken(ctx, a) })
		},
	}
	cmd.AddCommand(create, list, revoke, newACLTokenCertCommand(o))
	return cmd
}

func grants(t *v4.ACLTokenInfo) string {
	if t.Management {
		return "management"
	}
	return "policies " + strings.Join(t.Policies, ",")
}

func newACLPolicyCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{Use: "policy", Short: "Apply, list and delete policies", Args: cobra.NoArgs}
	var file string
	apply := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Create or replace the policies of a YAML or JSON file (documents of kind acl-policy)",
		Example: "  cat > dev.yaml <<'YAML'\n  kind: acl-policy\n  metadata: {name: dev}\n  rules:\n" +
			"    - {namespaces: [\"dev-*\"], kinds: [\"*\"], verbs: [read, write, logs]}\n  YAML\n  berth acl policy apply -f dev.yaml",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := readPolicyFile(o, file)
			if err != nil {
				return err
			}
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				for _, doc := range data {
					if err := c.PutACLPolicy(ctx, doc.name, doc.raw); err != nil {
						return fmt.Errorf("policy %s: %w", doc.name, err)
					}
					fmt.Fprintf(o.out(), "acl-policy %s applied\n", doc.name)
				}
				return nil
			})
		},
	}
	apply.Flags().StringVarP(&file, "filename", "f", "", "file of acl-policy documents (- for standard input)")
	apply.MarkFlagRequired("filename")
	list := &cobra.Command{
		Use: "list", Aliases: []string{"ls"}, Short: "List the policies", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withFormatAndClient(cmd, func(ctx context.Context, c *client.Client, format outputFormat) error {
				raw, err := c.ACLPolicies(ctx)
				if err != nil {
					return err
				}
				var ps []acl.Policy
				for _, r := range raw {
					var p acl.Policy
					if err := yaml.Unmarshal(r, &p); err != nil {
						return fmt.Errorf("decode policy: %w", err)
					}
					ps = append(ps, p)
				}
				return printList(o, format, ps, []string{"NAME", "RULES", "DESCRIPTION"}, func(p acl.Policy) []string {
					return []string{p.Metadata.Name, fmt.Sprint(len(p.Rules)), orNone(p.Metadata.Description)}
				})
			})
		},
	}
	del := &cobra.Command{
		Use: "delete NAME...", Short: "Delete policies (tokens carrying them lose what they granted)", Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.eachArg(cmd, args, "acl-policy", "deleted", func(ctx context.Context, c *client.Client, a string) error { return c.DeleteACLPolicy(ctx, a) })
		},
	}
	cmd.AddCommand(apply, list, del)
	return cmd
}

// maxPolicyFile bounds a policy file, as the server bounds its request bodies.
const maxPolicyFile = 1 << 20

type policyDoc struct {
	name string
	raw  []byte
}

// readPolicyFile splits a file into its acl-policy documents, each checked here so a typo
// is named with its document before anything is sent.
func readPolicyFile(o *options, path string) ([]policyDoc, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(io.LimitReader(o.env.stdin, maxPolicyFile+1))
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxPolicyFile {
		return nil, fmt.Errorf("%s: over %d bytes", path, maxPolicyFile)
	}
	var out []policyDoc
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	for i := 1; ; i++ {
		var node yaml.Node
		if err := dec.Decode(&node); err != nil {
			if err.Error() == "EOF" {
				break
			}
			return nil, fmt.Errorf("%s: document %d: %w", path, i, err)
		}
		var p acl.Policy
		if err := node.Decode(&p); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i, err)
		}
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i, err)
		}
		raw, err := yaml.Marshal(&node)
		if err != nil {
			return nil, err
		}
		out = append(out, policyDoc{name: p.Metadata.Name, raw: raw})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no acl-policy document", path)
	}
	return out, nil
}

// newWhoamiCommand says who the CLI's token is.
func newWhoamiCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use: "whoami", Short: "Show who your token is and the policies it carries", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withFormatAndClient(cmd, func(ctx context.Context, c *client.Client, format outputFormat) error {
				me, err := c.Whoami(ctx)
				if err != nil {
					return err
				}
				if format == outJSON || format == outYAML {
					return printStructured(o.out(), format, me)
				}
				switch {
				case me.Anonymous:
					fmt.Fprintf(o.out(), "anonymous (no token): policies %s\n", orNone(strings.Join(me.Policies, ",")))
				case me.Management:
					fmt.Fprintf(o.out(), "%s %s: management token (every right)\n", me.Token, me.Name)
				default:
					fmt.Fprintf(o.out(), "%s %s: policies %s\n", me.Token, me.Name, strings.Join(me.Policies, ","))
				}
				return nil
			})
		},
	}
}

// newAuthCommand holds `berth auth can-i`.
func newAuthCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{Use: "auth", Short: "Ask what your token may do", Args: cobra.NoArgs}
	cmd.AddCommand(&cobra.Command{
		Use:     "can-i VERB KIND",
		Short:   "Say yes or no: may your token do VERB on KIND in the namespace (-n, or -A for every one)?",
		Example: "  berth auth can-i exec taskgroup -n dev\n  berth auth can-i read secret -n prod",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withFormatAndClient(cmd, func(ctx context.Context, c *client.Client, _ outputFormat) error {
				kind := args[1]
				if k, err := v4.ParseKind(kind); err == nil {
					kind = string(k)
				}
				ns := o.namespace
				if all, _ := cmd.Flags().GetBool("all-namespaces"); all {
					ns = "*"
				}
				ans, err := c.CanI(ctx, v4.CanI{Verb: args[0], Kind: kind, Namespace: ns})
				if err != nil {
					return err
				}
				if !ans.Allowed {
					fmt.Fprintln(o.out(), "no")
					return &ExitError{Code: 1}
				}
				fmt.Fprintln(o.out(), "yes")
				return nil
			})
		},
	})
	cmd.Commands()[0].Flags().BoolP("all-namespaces", "A", false, "in every namespace")
	return cmd
}
