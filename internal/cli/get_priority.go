package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// priorityKinds are the names `berth get` takes for priority classes.
var priorityKinds = map[string]bool{"priorityclasses": true, "priorityclass": true, "pc": true}

func priorityKind(s string) bool { return priorityKinds[strings.ToLower(s)] }

// runGetPriority is get of the cluster's priority classes (docs/policy.md, "Priorities
// and preemption"): a table, or the documents.
func runGetPriority(cmd *cobra.Command, o *options, f getFlags, args []string) error {
	if f.watch || f.definition {
		return fmt.Errorf("priority classes have no --watch or --definition")
	}
	format, err := o.format()
	if err != nil {
		return err
	}
	return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
		var classes []*v4.PriorityClass
		if len(args) == 2 {
			pc, err := c.PriorityClass(ctx, args[1])
			if err != nil {
				return err
			}
			classes = []*v4.PriorityClass{pc}
		} else if classes, err = c.PriorityClasses(ctx); err != nil {
			return err
		}
		w := o.out()
		switch format {
		case outJSON, outYAML:
			if len(args) == 2 {
				return printStructured(w, format, classes[0])
			}
			return printStructured(w, format, v4.PriorityClassList{Kind: "List", Items: classes})
		case outName:
			for _, pc := range classes {
				fmt.Fprintln(w, "priorityclass/"+pc.Metadata.Name)
			}
			return nil
		}
		if len(classes) == 0 {
			fmt.Fprintln(o.env.stderr, "No priorityclasses found.")
			return nil
		}
		rows := make([][]string, 0, len(classes))
		for _, pc := range classes {
			rows = append(rows, priorityClassRow(pc))
		}
		return writeTable(w, priorityClassHeader, rows)
	})
}
