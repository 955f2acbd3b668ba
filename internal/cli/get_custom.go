package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/internal/client"
)

// crdKinds are the names `berth get` takes for the custom resource definitions.
var crdKinds = map[string]bool{"customresourcedefinitions": true, "customresourcedefinition": true, "crd": true, "crds": true}

// customKind reports whether get's KIND names custom resource definitions, or the
// resources of one (plural.group: no kind of berth's has a ".").
func customKind(s string) bool {
	s = strings.ToLower(s)
	return crdKinds[s] || strings.Contains(s, ".")
}

// runGetCustom is get of custom resource definitions or of a definition's resources
// (docs/api.md, "Custom resources"): a table of names, or the documents.
func runGetCustom(cmd *cobra.Command, o *options, f getFlags, args []string) error {
	if f.watch || f.definition {
		return fmt.Errorf("custom resources have no --watch or --definition")
	}
	format, err := o.format()
	if err != nil {
		return err
	}
	kind := strings.ToLower(args[0])
	name := ""
	if len(args) == 2 {
		name = args[1]
	}
	defs := crdKinds[kind]
	ns := o.namespace
	if f.allNamespaces {
		if name != "" {
			return fmt.Errorf("a NAME is looked up in one namespace: use -n instead of -A")
		}
		ns = ""
	}
	return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
		var docs []map[string]any
		switch {
		case defs && name != "":
			d, err := c.CustomResourceDefinition(ctx, name)
			if err != nil {
				return err
			}
			docs = append(docs, d)
		case defs:
			if docs, err = c.CustomResourceDefinitions(ctx); err != nil {
				return err
			}
		case name != "":
			d, err := c.CustomResource(ctx, kind, ns, name)
			if err != nil {
				return err
			}
			docs = append(docs, d)
		default:
			if docs, err = c.CustomResources(ctx, kind, ns); err != nil {
				return err
			}
		}
		return printCustom(o, format, docs, name != "", !defs && ns == "")
	})
}

func printCustom(o *options, format outputFormat, docs []map[string]any, single, allNS bool) error {
	w := o.out()
	switch format {
	case outJSON, outYAML:
		if single && len(docs) == 1 {
			return printStructured(w, format, docs[0])
		}
		return printStructured(w, format, map[string]any{"kind": "List", "items": docs})
	case outName:
		for _, d := range docs {
			fmt.Fprintln(w, metaString(d, "name"))
		}
		return nil
	}
	header := []string{"NAME", "AGE"}
	if allNS {
		header = []string{"NAMESPACE", "NAME", "AGE"}
	}
	rows := make([][]string, 0, len(docs))
	for _, d := range docs {
		created, _ := time.Parse(time.RFC3339, metaString(d, "creationTimestamp"))
		row := []string{metaString(d, "name"), age(created, o.env.now())}
		if allNS {
			row = append([]string{metaString(d, "namespace")}, row...)
		}
		rows = append(rows, row)
	}
	return writeTable(w, header, rows)
}

// metaString is a string of a document's metadata ("" when missing).
func metaString(d map[string]any, key string) string {
	m, _ := d["metadata"].(map[string]any)
	s, _ := m[key].(string)
	return s
}
