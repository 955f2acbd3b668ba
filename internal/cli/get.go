package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

type getFlags struct {
	allNamespaces bool
	watch         bool
	definition    bool
}

func newGetCommand(o *options) *cobra.Command {
	var f getFlags
	cmd := &cobra.Command{
		Use:   "get KIND [NAME]",
		Short: "List objects of a kind, or show one",
		Long: "List objects of a kind, or show one.\n\n" +
			"KIND is a kind, its plural or a short name: application (app, apps), process (proc, procs),\n" +
			"deployment (deploy), daemonset (ds), service (svc), configmap (cm), secret; and the\n" +
			"cluster's node (nodes, no) and taskgroup (taskgroups, tg) objects; priorityclasses (pc);\n" +
			"customresourcedefinitions (crd)\n" +
			"and a definition's resources by its name (PLURAL.GROUP).",
		Example: "  berth get apps -A\n" +
			"  berth get process gamesvc -n ns-a -o yaml\n" +
			"  berth get process gamesvc --definition\n" +
			"  berth get svc -w\n" +
			"  berth get node node-1 -o yaml",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGet(cmd, o, f, args)
		},
	}
	cmd.Flags().BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "list objects of every namespace")
	cmd.Flags().BoolVarP(&f.watch, "watch", "w", false, "after listing, stream changes")
	cmd.Flags().BoolVar(&f.definition, "definition", false, "print the document as originally submitted")
	return cmd
}

func runGet(cmd *cobra.Command, o *options, f getFlags, args []string) error {
	if customKind(args[0]) {
		return runGetCustom(cmd, o, f, args)
	}
	if webhookKind(args[0]) { // webhook.go
		return runGetWebhooks(cmd, o, f, args)
	}
	if priorityKind(args[0]) {
		return runGetPriority(cmd, o, f, args)
	}
	kind, err := kindArg(args[0])
	if err != nil {
		return err
	}
	format, err := o.format()
	if err != nil {
		return err
	}
	name := ""
	if len(args) == 2 {
		name = args[1]
	}
	if name != "" && f.allNamespaces {
		return fmt.Errorf("a NAME is looked up in one namespace: use -n instead of -A")
	}
	if f.definition && (name == "" || f.watch) {
		return fmt.Errorf("--definition needs a NAME and cannot be combined with --watch")
	}
	ns := o.namespace
	if f.allNamespaces || !kind.Namespaced() {
		ns = ""
	}
	return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
		switch {
		case f.definition:
			return printDefinition(ctx, o, c, kind, name)
		case f.watch: // streamed until interrupted: not bounded by --request-timeout
			return watchObjects(cmdContext(cmd), o, c, kind, ns, name, format)
		case name != "":
			obj, err := c.Get(ctx, kind, ns, name)
			if err != nil {
				return err
			}
			return printObjects(o, kind, format, []v4.Object{obj}, false, true)
		}
		list, err := c.List(ctx, kind, ns)
		if err != nil {
			return err
		}
		if len(list.Items) == 0 && format == outTable {
			where := " in namespace " + ns
			if ns == "" || !kind.Namespaced() {
				where = ""
			}
			fmt.Fprintf(o.env.stderr, "No %s found%s.\n", kind.Plural(), where)
			return nil
		}
		return printObjects(o, kind, format, list.Items, f.allNamespaces && kind.Namespaced(), false)
	})
}

// printObjects prints the answer of get; single is a get by name (no List wrapper).
func printObjects(o *options, kind v4.Kind, format outputFormat, objs []v4.Object, allNS, single bool) error {
	w := o.out()
	switch format {
	case outJSON, outYAML:
		if single && len(objs) == 1 {
			return printStructured(w, format, objs[0])
		}
		return printStructured(w, format, listDoc{Kind: "List", Items: objs})
	case outName:
		for _, obj := range objs {
			fmt.Fprintln(w, objectName(obj.GetKind(), obj.GetMeta().Name))
		}
		return nil
	}
	t := objectTable{kind: kind, allNS: allNS, now: o.env.now()}
	rows := make([][]string, 0, len(objs))
	for _, obj := range objs {
		rows = append(rows, t.row("", obj))
	}
	return writeTable(w, t.header(), rows)
}

func printDefinition(ctx context.Context, o *options, c *client.Client, kind v4.Kind, name string) error {
	data, _, err := c.Definition(ctx, kind, o.namespace, name)
	if err != nil {
		return err
	}
	if _, err := o.out().Write(data); err != nil {
		return err
	}
	if len(data) > 0 && !strings.HasSuffix(string(data), "\n") {
		fmt.Fprintln(o.out())
	}
	return nil
}

// watchObjects streams changes until the user interrupts or the stream breaks. The watch
// starts without a revision, so the server first sends every existing object as ADDED.
func watchObjects(ctx context.Context, o *options, c *client.Client, kind v4.Kind, ns, name string, format outputFormat) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the client's stream goroutine when we return early
	events, err := c.Watch(ctx, kind, ns, "")
	if err != nil {
		return err
	}
	w := o.out()
	t := objectTable{kind: kind, allNS: ns == "" && kind.Namespaced(), watch: true}
	// EVENT is as wide as its widest value from the start, so the columns never shift.
	st := &streamTable{w: w, widths: []int{len(client.EventModified)}}
	header := t.header()
	for ev := range events {
		if ev.Err != nil {
			return ev.Err
		}
		if name != "" && ev.Object.GetMeta().Name != name {
			continue
		}
		switch format {
		case outJSON, outYAML:
			if format == outYAML {
				fmt.Fprintln(w, "---")
			}
			doc := struct {
				Type   string    `json:"type"`
				Object v4.Object `json:"object"`
			}{ev.Type, ev.Object}
			if err := printStructured(w, format, doc); err != nil {
				return err
			}
		case outName:
			fmt.Fprintln(w, objectName(ev.Object.GetKind(), ev.Object.GetMeta().Name))
		default:
			t.now = o.env.now()
			rows := [][]string{t.row(ev.Type, ev.Object)}
			if header != nil { // printed with the first row, so both align
				rows, header = append([][]string{header}, rows...), nil
			}
			if err := st.write(rows...); err != nil {
				return err
			}
		}
	}
	return nil
}
