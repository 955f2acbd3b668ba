package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// newPriorityClassCommand writes the cluster's priority classes (docs/policy.md,
// "Priorities and preemption"): they have routes of their own, written by
// administrators; `berth apply` puts them on the same routes (apply_cluster.go).
func newPriorityClassCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "priorityclass",
		Aliases: []string{"priorityclasses"},
		Short:   "Write the cluster's priority classes (administrators)",
	}
	cmd.AddCommand(clusterDocCommands(o, "priorityclass",
		"Create or replace priority classes (YAML or JSON, Kubernetes' PriorityClass shape)",
		"  berth priorityclass apply -f high.yaml\n  berth get priorityclasses",
		applyPriorityClassDoc, func(ctx context.Context, c *client.Client, name string) error {
			return c.DeletePriorityClass(ctx, name)
		})...)
	return cmd
}

// applyPriorityClassDoc puts one class; a field the class does not have is an error
// here rather than a class silently written without it.
func applyPriorityClassDoc(ctx context.Context, c *client.Client, d document, body []byte) (v4.ApplyResult, error) {
	var pc v4.PriorityClass
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pc); err != nil {
		return v4.ApplyResult{}, fmt.Errorf("%s: not a priority class: %w", d.where(), err)
	}
	// Kubernetes' scheduling.k8s.io/v1 PriorityClass is berth's priorityclass.
	if pc.Kind != "" && !strings.EqualFold(string(pc.Kind), string(v4.KindPriorityClass)) {
		return v4.ApplyResult{}, fmt.Errorf("%s: kind %q is not a priority class", d.where(), pc.Kind)
	}
	pc.TypeMeta = v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindPriorityClass}
	if pc.Metadata.Name == "" {
		return v4.ApplyResult{}, fmt.Errorf("%s: a priority class needs metadata.name", d.where())
	}
	out, err := c.PutPriorityClass(ctx, &pc)
	if err != nil {
		return v4.ApplyResult{}, fmt.Errorf("%s: %w", d.where(), err)
	}
	return v4.ApplyResult{Kind: v4.KindPriorityClass, Name: out.Metadata.Name, Action: fmt.Sprintf("applied (value %d)", out.Value),
		ResourceVersion: out.Metadata.ResourceVersion}, nil
}
