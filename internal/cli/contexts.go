package cli

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/berthhq/berth/internal/atomicfile"
)

// newConfigCommand lists the config file's contexts and chooses the current one (docs/cli.md,
// "Contexts").
func newConfigCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Show and choose the contexts of the CLI config file", Args: cobra.NoArgs}
	cmd.AddCommand(&cobra.Command{
		Use: "get-contexts", Short: "List the config file's contexts (* marks the current one)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, cfg, _, err := o.configFile()
			if err != nil {
				return err
			}
			if len(cfg.Contexts) == 0 {
				fmt.Fprintf(o.env.stderr, "%s has no contexts.\n", path)
				return nil
			}
			rows := make([][]string, 0, len(cfg.Contexts))
			for _, c := range cfg.Contexts {
				mark := ""
				if c.Name == cfg.CurrentContext {
					mark = "*"
				}
				token := "<none>"
				if c.Token != "" {
					token = "set"
				}
				rows = append(rows, []string{mark, c.Name, orNone(c.Server), orNone(c.CACert), token})
			}
			return writeTable(o.out(), []string{"CURRENT", "NAME", "SERVER", "CA", "TOKEN"}, rows)
		},
	}, &cobra.Command{
		Use: "use-context NAME", Short: "Make NAME the config file's current context", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, cfg, doc, err := o.configFile()
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(cfg.Contexts, func(c fileContext) bool { return c.Name == args[0] }) {
				return fmt.Errorf("%s has no context %q: see `berth config get-contexts`", path, args[0])
			}
			if err := setKey(doc, "current-context", args[0]); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			out, err := yaml.Marshal(doc)
			if err != nil {
				return err
			}
			if err := atomicfile.Write(path, out, 0o600); err != nil {
				return err
			}
			fmt.Fprintf(o.out(), "current context: %s\n", args[0])
			return nil
		},
	})
	return cmd
}

// configFile reads the whole config file, as a config and as a YAML document (kept for
// rewriting it with its comments).
func (o *options) configFile() (string, fileConfig, *yaml.Node, error) {
	path, _, err := configPath(o.env)
	if err != nil || path == "" {
		return "", fileConfig{}, nil, errors.Join(err, errors.New("no config file: set $BERTH_CONFIG"))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fileConfig{}, nil, fmt.Errorf("read config file: %w", err)
	}
	var cfg fileConfig
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return "", fileConfig{}, nil, fmt.Errorf("config file %s: %w", path, err)
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "", fileConfig{}, nil, fmt.Errorf("config file %s: %w", path, err)
	}
	return path, cfg, &doc, nil
}

// setKey sets a top-level string key of a YAML document.
func setKey(doc *yaml.Node, key, value string) error {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return errors.New("the config file is not a YAML mapping")
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = &yaml.Node{Kind: yaml.ScalarNode, Value: value}
			return nil
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &yaml.Node{Kind: yaml.ScalarNode, Value: value})
	return nil
}
