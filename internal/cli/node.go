package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// `berth node ...` changes what operators own on a node, each through one PATCH
// (a JSON merge patch) of /v1/nodes/{name}.

func newNodeCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Label, taint, set attributes of, disable or enable a node",
		Long: "Change what operators own on a node. List nodes with `berth nodes`, show one with\n" +
			"`berth describe node NAME`.",
	}
	cmd.AddCommand(newNodeLabelCommand(o), newNodeAttrCommand(o), newNodeTaintCommand(o),
		newNodeSwitchCommand(o, "disable", "Stop placing new task groups on a node (what runs there stays)", true),
		newNodeSwitchCommand(o, "enable", "Let the scheduler place task groups on a node again", false))
	return cmd
}

func newNodeLabelCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:     "label NAME KEY=VALUE... [KEY-]...",
		Short:   "Set or remove labels of a node",
		Example: "  berth node label node-1 zone=a tier=db\n  berth node label node-1 tier-",
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			labels := map[string]any{}
			for _, a := range args[1:] {
				if k, ok := strings.CutSuffix(a, "-"); ok && !strings.Contains(a, "=") {
					labels[k] = nil
					continue
				}
				k, v, ok := strings.Cut(a, "=")
				if !ok || k == "" {
					return fmt.Errorf("label %q: want KEY=VALUE to set or KEY- to remove", a)
				}
				labels[k] = v
			}
			return patchNode(cmd, o, args[0], "labeled", map[string]any{"metadata": map[string]any{"labels": labels}})
		},
	}
}

type attrFlags struct {
	text, scalar, set, remove []string
}

func newNodeAttrCommand(o *options) *cobra.Command {
	var f attrFlags
	cmd := &cobra.Command{
		Use:   "attr NAME [--text N=V] [--scalar N=NUMBER] [--set N=A,B] [--remove N]",
		Short: "Set or remove attributes (what constraints match on) of a node",
		Long: "Set or remove the typed attributes constraints match on. An attribute has one type:\n" +
			"setting it as text removes a scalar or set of the same name, and so on.",
		Example: "  berth node attr node-1 --text rack=r1 --scalar cpus=8 --set zone=a,b\n" +
			"  berth node attr node-1 --remove rack",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			attrs, err := f.patch()
			if err != nil {
				return err
			}
			return patchNode(cmd, o, args[0], "attributes updated", map[string]any{"spec": map[string]any{"attributes": attrs}})
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.text, "text", nil, "text attribute NAME=VALUE; repeatable")
	fl.StringArrayVar(&f.scalar, "scalar", nil, "scalar attribute NAME=NUMBER; repeatable")
	fl.StringArrayVar(&f.set, "set", nil, "set attribute NAME=ITEM,ITEM; repeatable")
	fl.StringArrayVar(&f.remove, "remove", nil, "attribute NAME to remove (of any type); repeatable")
	return cmd
}

// patch builds the merge patch of spec.attributes: each name set in one type is removed
// from the other two, since constraints look a name up in one map only.
func (f *attrFlags) patch() (map[string]any, error) {
	maps := map[string]map[string]any{"text": {}, "scalar": {}, "set": {}}
	put := func(typ, name string, v any) {
		for t, m := range maps {
			if t == typ {
				m[name] = v
			} else if _, set := m[name]; !set {
				m[name] = nil
			}
		}
	}
	for _, a := range f.text {
		name, v, err := attrArg("--text", a)
		if err != nil {
			return nil, err
		}
		put("text", name, v)
	}
	for _, a := range f.scalar {
		name, v, err := attrArg("--scalar", a)
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("--scalar %s: %q is not a number", a, v)
		}
		put("scalar", name, n)
	}
	for _, a := range f.set {
		name, v, err := attrArg("--set", a)
		if err != nil {
			return nil, err
		}
		items := strings.Split(v, ",")
		for _, it := range items {
			if it == "" {
				return nil, fmt.Errorf("--set %s: empty item", a)
			}
		}
		put("set", name, items)
	}
	for _, name := range f.remove {
		if name == "" {
			return nil, fmt.Errorf("--remove needs an attribute name")
		}
		for _, m := range maps {
			m[name] = nil
		}
	}
	if len(f.text)+len(f.scalar)+len(f.set)+len(f.remove) == 0 {
		return nil, fmt.Errorf("nothing to change: give --text, --scalar, --set or --remove")
	}
	out := map[string]any{}
	for t, m := range maps {
		out[t] = m
	}
	return out, nil
}

func attrArg(flag, a string) (string, string, error) {
	name, v, ok := strings.Cut(a, "=")
	if !ok || name == "" {
		return "", "", fmt.Errorf("%s %q: want NAME=VALUE", flag, a)
	}
	return name, v, nil
}

func newNodeSwitchCommand(o *options, verb, short string, disabled bool) *cobra.Command {
	return &cobra.Command{
		Use:     verb + " NAME",
		Short:   short,
		Example: "  berth node " + verb + " node-1",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return patchNode(cmd, o, args[0], verb+"d", map[string]any{"spec": map[string]any{"disabled": disabled}})
		},
	}
}

// patchNode sends one merge patch and reports the result ("node/node-1 labeled").
func patchNode(cmd *cobra.Command, o *options, name, done string, patch map[string]any) error {
	format, err := o.format()
	if err != nil {
		return err
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return fmt.Errorf("encode patch: %w", err)
	}
	return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
		n, err := c.PatchNode(ctx, name, body)
		if err != nil {
			return err
		}
		return printNodeResult(o, format, n, done)
	})
}

func printNodeResult(o *options, format outputFormat, n *v4.Node, done string) error {
	switch format {
	case outJSON, outYAML:
		return printStructured(o.out(), format, n)
	case outName:
		_, err := fmt.Fprintln(o.out(), objectName(v4.KindNode, n.Metadata.Name))
		return err
	}
	_, err := fmt.Fprintf(o.out(), "%s %s\n", objectName(v4.KindNode, n.Metadata.Name), done)
	return err
}

// taintAttempts bounds the read-modify-write of taints when other writers race it.
const taintAttempts = 3

func newNodeTaintCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "taint NAME KEY=VALUE:NoSchedule... [KEY-]...",
		Short: "Add, replace or remove taints of a node",
		Long: "A taint keeps task groups off a node unless they tolerate it (a TOLERATION\n" +
			"constraint). KEY=VALUE:NoSchedule adds a taint or replaces the one with that key;\n" +
			"KEY- removes the taints with that key.",
		Example: "  berth node taint node-1 dedicated=db:NoSchedule\n  berth node taint node-1 dedicated-",
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := o.format()
			if err != nil {
				return err
			}
			edits, err := parseTaintArgs(args[1:])
			if err != nil {
				return err
			}
			done := "untainted"
			for _, e := range edits {
				if !e.remove {
					done = "tainted"
				}
			}
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				n, err := retaint(ctx, c, args[0], edits)
				if err != nil {
					return err
				}
				return printNodeResult(o, format, n, done)
			})
		},
	}
}

// taintEdit adds (taint set) or removes (remove) the taints of one key.
type taintEdit struct {
	key    string
	taint  v4.Taint
	remove bool
}

func parseTaintArgs(args []string) ([]taintEdit, error) {
	var out []taintEdit
	for _, a := range args {
		if k, ok := strings.CutSuffix(a, "-"); ok && !strings.ContainsAny(a, "=:") {
			out = append(out, taintEdit{key: k, remove: true})
			continue
		}
		kv, effect, ok := strings.Cut(a, ":")
		k, v, hasValue := strings.Cut(kv, "=")
		if !ok || !hasValue || k == "" || v == "" || effect == "" {
			return nil, fmt.Errorf("taint %q: want KEY=VALUE:NoSchedule to add or KEY- to remove", a)
		}
		out = append(out, taintEdit{key: k, taint: v4.Taint{Key: k, Value: v, Effect: effect}})
	}
	return out, nil
}

// retaint reads the node, edits its taints and writes them back with the read
// resourceVersion (a merge patch replaces the whole list), retrying if the node changed.
func retaint(ctx context.Context, c *client.Client, name string, edits []taintEdit) (*v4.Node, error) {
	var lastErr error
	for range taintAttempts {
		n, err := c.Node(ctx, name)
		if err != nil {
			return nil, err
		}
		taints := applyTaintEdits(n.Spec.Taints, edits)
		body, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": n.Metadata.ResourceVersion},
			"spec":     map[string]any{"taints": taints},
		})
		if err != nil {
			return nil, fmt.Errorf("encode patch: %w", err)
		}
		out, err := c.PatchNode(ctx, name, body)
		if !client.IsConflict(err) {
			return out, err
		}
		lastErr = err
	}
	return nil, fmt.Errorf("node %s kept changing: %w", name, lastErr)
}

func applyTaintEdits(taints []v4.Taint, edits []taintEdit) []v4.Taint {
	out := append([]v4.Taint{}, taints...)
	for _, e := range edits {
		kept := out[:0:0]
		for _, t := range out {
			if t.Key != e.key {
				kept = append(kept, t)
			}
		}
		if !e.remove {
			kept = append(kept, e.taint)
		}
		out = kept
	}
	return out
}
