package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// clusterDocCommands are `apply -f FILE` and `delete NAME...` of a cluster-wide kind
// with routes of its own (admission webhooks, priority classes), which `berth apply`
// also routes there (apply_cluster.go): apply puts each document of FILE (YAML or JSON, given to put as JSON),
// delete removes each name.
func clusterDocCommands(o *options, kind, short, example string,
	put clusterPut,
	remove func(ctx context.Context, c *client.Client, name string) error) []*cobra.Command {
	var file string
	apply := &cobra.Command{
		Use: "apply -f FILE", Short: short, Example: example, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			src, err := readSource(file, o.env.stdin, 1<<20)
			if err != nil {
				return err
			}
			docs, err := splitSource(src)
			if err != nil {
				return err
			}
			format, err := o.format()
			if err != nil {
				return err
			}
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				var results []v4.ApplyResult
				defer func() { printApplyResults(o.out(), format, results) }()
				for _, d := range docs {
					body, err := documentJSON(d)
					if err != nil {
						return err
					}
					r, err := put(ctx, c, d, body)
					if err != nil {
						return err
					}
					results = append(results, r)
				}
				return nil
			})
		},
	}
	apply.Flags().StringVarP(&file, "filename", "f", "", "file of documents (- for standard input)")
	apply.MarkFlagRequired("filename")
	del := &cobra.Command{
		Use: "delete NAME...", Short: "Delete " + kind + "s", Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.eachArg(cmd, args, kind, "deleted", remove)
		},
	}
	return []*cobra.Command{apply, del}
}

// documentJSON is d as JSON: a YAML document is converted.
func documentJSON(d document) ([]byte, error) {
	if d.json {
		return d.raw, nil
	}
	var v any
	if err := yaml.Unmarshal(d.raw, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", d.where(), err)
	}
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.where(), err)
	}
	return body, nil
}
