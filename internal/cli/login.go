package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/berthhq/berth/internal/atomicfile"
	"github.com/berthhq/berth/internal/client"
)

// newLoginCommand checks a token against the server and keeps it, with the server and the
// CA, in the CLI config file (docs/cli.md, "berth login").
func newLoginCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "login",
		Short: "Check a token against the server and keep it in the CLI config file",
		Long: "Check a token (--token, $BERTH_TOKEN, else read from standard input) with the server\n" +
			"and write it, the server address and the CA certificate to the config file: into the\n" +
			"context of --context (made current), else its top-level keys. The file is 0600; the\n" +
			"rest of it, comments included, is kept.",
		Example: "  berth login --server 10.0.0.1:7470 --ca-cert ./ca.crt < token.txt\n" +
			"  berth login --context prod --server prod-1:7470,prod-2:7470 --ca-cert prod-ca.crt --token \"$TOKEN\"",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			token := o.token
			if token == "" {
				token = o.env.getenv("BERTH_TOKEN")
			}
			if token == "" {
				line, err := bufio.NewReader(o.env.stdin).ReadString('\n')
				if err != nil && line == "" {
					return errors.New("no token: give --token, set BERTH_TOKEN, or write it to standard input")
				}
				token = strings.TrimSpace(line)
			}
			server, err := resolveServer(o.server, o.settingsEnv())
			if err != nil {
				return err
			}
			ca, err := resolveCACert(o.caCert, o.settingsEnv())
			if err != nil {
				return err
			}
			if ca != "" {
				if ca, err = filepath.Abs(ca); err != nil {
					return err
				}
			}
			hc, err := o.httpClient()
			if err != nil {
				return err
			}
			c, err := client.New(server, client.WithHTTPClient(hc), client.WithBearerToken(token), client.WithUserAgent("berth/"+Version))
			if err != nil {
				return err
			}
			ctx, cancel := o.requestContext(cmd)
			defer cancel()
			me, err := whoamiOf(ctx, c)
			if err != nil {
				return err
			}
			path, err := saveLogin(o.env, o.context, clusterSettings{Server: server, CACert: ca, Token: token})
			if err != nil {
				return err
			}
			fmt.Fprintf(o.out(), "logged in to %s as %s; saved in %s\n", server, me, path)
			return nil
		},
	}
}

// whoamiOf checks the client's token: who it is, or the server's refusal.
func whoamiOf(ctx context.Context, c *client.Client) (string, error) {
	me, err := c.Whoami(ctx)
	if err != nil {
		return "", err
	}
	if me.Anonymous {
		return "", errors.New("the server took the request as anonymous: no token was sent")
	}
	who := me.Token
	if me.Name != "" {
		who += " (" + me.Name + ")"
	}
	return who, nil
}

// saveLogin writes settings into the config file: the named context (created if missing,
// and made current), or the top-level keys.
func saveLogin(e *env, contextName string, set clusterSettings) (string, error) {
	path, _, err := configPath(e)
	if err != nil || path == "" {
		return "", errors.Join(err, errors.New("no config file: set $BERTH_CONFIG"))
	}
	var doc yaml.Node
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) || (err == nil && strings.TrimSpace(string(data)) == ""):
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	case err != nil:
		return "", fmt.Errorf("read config file: %w", err)
	default:
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return "", fmt.Errorf("config file %s: %w", path, err)
		}
	}
	target := &doc
	if contextName != "" {
		if target, err = contextNode(&doc, contextName); err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		if err := setKey(&doc, "current-context", contextName); err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
	}
	for _, kv := range [][2]string{{"server", set.Server}, {"ca-cert", set.CACert}, {"token", set.Token}} {
		if kv[1] == "" {
			continue
		}
		if err := setKey(target, kv[0], kv[1]); err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	return path, atomicfile.Write(path, out, 0o600)
}

// contextNode returns the mapping of the named context as a document of its own (setKey's
// shape), adding the context when missing.
func contextNode(doc *yaml.Node, name string) (*yaml.Node, error) {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("the config file is not a YAML mapping")
	}
	m := doc.Content[0]
	var list *yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "contexts" {
			list = m.Content[i+1]
		}
	}
	if list == nil {
		list = &yaml.Node{Kind: yaml.SequenceNode}
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "contexts"}, list)
	}
	if list.Kind != yaml.SequenceNode {
		return nil, errors.New("contexts: is not a list")
	}
	for _, c := range list.Content {
		if c.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i+1 < len(c.Content); i += 2 {
			if c.Content[i].Value == "name" && c.Content[i+1].Value == name {
				return &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{c}}, nil
			}
		}
	}
	c := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "name"}, {Kind: yaml.ScalarNode, Value: name}}}
	list.Content = append(list.Content, c)
	return &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{c}}, nil
}
