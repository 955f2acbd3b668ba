package cli

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// target is one object to delete.
type target struct {
	kind      v4.Kind
	namespace string
	name      string
}

func newDeleteCommand(o *options) *cobra.Command {
	var f fileFlags
	var ignoreNotFound, force bool
	cmd := &cobra.Command{
		Use:   "delete (KIND NAME... | -f FILE|DIR|-)",
		Short: "Delete objects by name or as defined in files",
		Example: "  berth delete process gamesvc -n ns-a\n" +
			"  berth delete cm cfg-a cfg-b\n" +
			"  berth delete -f examples/ --ignore-not-found",
		RunE: func(cmd *cobra.Command, args []string) error {
			targets, err := deleteTargets(cmd, o, &f, args)
			if err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			var opts []client.DeleteOption
			if force {
				opts = append(opts, client.WithForce())
			}
			return deleteAll(cmd, o, c, targets, ignoreNotFound, opts...)
		},
	}
	f.register(cmd, "delete")
	cmd.Flags().BoolVar(&ignoreNotFound, "ignore-not-found", false, "treat objects that do not exist as deleted")
	cmd.Flags().BoolVar(&force, "force", false, "delete a dependency even while task groups use it (its pods are stopped), or a configmap or secret that workloads name")
	return cmd
}

// deleteTargets turns the arguments or the files into the objects to delete.
func deleteTargets(cmd *cobra.Command, o *options, f *fileFlags, args []string) ([]target, error) {
	if len(f.files) > 0 {
		if len(args) > 0 {
			return nil, errors.New("give either KIND NAME... or -f, not both")
		}
		if err := refuseNamespaceFlag(cmd, "delete -f"); err != nil {
			return nil, err
		}
		docs, err := f.documents(o.env.stdin)
		if err != nil {
			return nil, err
		}
		return docTargets(docs)
	}
	if len(args) < 2 {
		return nil, errors.New("give KIND and at least one NAME, or -f FILE|DIR|-")
	}
	kind, err := kindArg(args[0])
	if err != nil {
		return nil, err
	}
	out := make([]target, 0, len(args)-1)
	for _, name := range args[1:] {
		out = append(out, target{kind: kind, namespace: o.namespace, name: name})
	}
	return out, nil
}

// docIdentity is the part of a document that names its object.
type docIdentity struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
	} `yaml:"metadata"`
}

// docTargets reads kind, namespace and name from each document. Only these are decoded
// (YAML reads JSON too), so a document the server would now reject can still be deleted.
func docTargets(docs []document) ([]target, error) {
	out := make([]target, 0, len(docs))
	for _, d := range docs {
		where := d.file
		if d.count > 1 {
			where += fmt.Sprintf(" (document %d)", d.index+1)
		}
		var id docIdentity
		if err := yaml.Unmarshal(d.raw, &id); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		kind, err := v4.ParseKind(id.Kind)
		if err != nil {
			return nil, fmt.Errorf("%s: kind: %w", where, err)
		}
		if id.Metadata.Name == "" {
			return nil, fmt.Errorf("%s: metadata.name: required", where)
		}
		ns := id.Metadata.Namespace
		if ns == "" {
			ns = v4.DefaultNamespace
		}
		out = append(out, target{kind: kind, namespace: ns, name: id.Metadata.Name})
	}
	// The server refuses to delete a configmap or a secret that a workload still names:
	// the workloads of the files go first.
	slices.SortStableFunc(out, func(a, b target) int { return cmp.Compare(configLast(a.kind), configLast(b.kind)) })
	return out, nil
}

// configLast orders configmaps and secrets after every other kind.
func configLast(k v4.Kind) int {
	if k == v4.KindConfigMap || k == v4.KindSecret {
		return 1
	}
	return 0
}

// deleteAll deletes every target, going on after a failure (like kubectl) and returning
// all the failures at the end.
func deleteAll(cmd *cobra.Command, o *options, c *client.Client, targets []target, ignoreNotFound bool, opts ...client.DeleteOption) error {
	var errs []error
	for _, t := range targets {
		ctx, cancel := o.requestContext(cmd)
		_, err := c.Delete(ctx, t.kind, t.namespace, t.name, opts...)
		cancel()
		ref := objectRef(t.kind, t.namespace, t.name)
		switch {
		case err == nil:
			fmt.Fprintf(o.out(), "%s deleted\n", ref)
		case client.IsNotFound(err) && ignoreNotFound:
		case client.IsNotFound(err):
			errs = append(errs, fmt.Errorf("%s not found", ref))
		default:
			var ue *client.UnreachableError
			if errors.As(err, &ue) {
				return err // every other call would fail the same way
			}
			errs = append(errs, fmt.Errorf("delete %s: %w", ref, err))
		}
	}
	return errors.Join(errs...)
}
