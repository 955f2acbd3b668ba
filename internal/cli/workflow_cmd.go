package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// workflowActions are the actions route's verbs and what the CLI prints after each;
// archived is the help of the same action on an archived workflow, for those the
// archive's actions route takes.
var workflowActions = []struct{ name, short, done, archived string }{
	{"suspend", "Hold a workflow: no new step starts until it is resumed", "suspended", ""},
	{"resume", "Resume a suspended workflow, or one Suspend node (--node)", "resumed", ""},
	{"stop", "Stop a workflow: no new step starts, running ones are stopped, exit handlers run", "stopped", ""},
	{"terminate", "Terminate a workflow: its steps are stopped and no exit handler runs", "terminated", ""},
	{"retry", "Run a failed workflow again from its failed steps, reusing the succeeded ones", "retried",
		"Store a failed archived workflow again under its name and run it from its failed steps"},
	{"resubmit", "Create a new workflow from this one's spec (-p overrides arguments)", "resubmitted",
		"Create a new workflow from an archived one's spec (-p overrides arguments)"},
}

func newWorkflowCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "workflow",
		Aliases: []string{"wf"},
		Short:   "Read and act on workflows: get, logs, suspend, resume, stop, terminate, retry, resubmit, archive",
	}
	cmd.AddCommand(newWorkflowGetCommand(o), newWorkflowLogsCommand(o), newWorkflowArchiveCommand(o))
	for _, a := range workflowActions {
		cmd.AddCommand(newWorkflowActionCommand(o, a.name, a.short, a.done, false))
	}
	return cmd
}

// newWorkflowActionCommand is `berth workflow ACTION NAME`, or with archived
// `berth workflow archive ACTION NAME [--uid UID]`.
func newWorkflowActionCommand(o *options, action, short, done string, archived bool) *cobra.Command {
	var node, uid string
	var params []string
	cmd := &cobra.Command{
		Use:   action + " NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, p := range params {
				if k, _, ok := splitParam(p); !ok || k == "" {
					return fmt.Errorf("-p %q: give NAME=VALUE", p)
				}
			}
			if err := checkUID(uid); err != nil {
				return err
			}
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				req := client.WorkflowActionRequest{Node: node, Parameters: params}
				wf, err := o.runWorkflowAction(ctx, c, args[0], action, uid, archived, req)
				if err != nil {
					return fmt.Errorf("%s workflow %s: %w", action, args[0], err)
				}
				if action == "resubmit" {
					fmt.Fprintf(o.out(), "%s created from %s\n", objectName(v4.KindWorkflow, wf.Metadata.Name), args[0])
					return nil
				}
				fmt.Fprintf(o.out(), "%s %s\n", objectName(v4.KindWorkflow, args[0]), done)
				return nil
			})
		},
	}
	switch action {
	case "resume":
		cmd.Flags().StringVar(&node, "node", "", "resume this Suspend node (name or ID) alone")
	case "resubmit":
		cmd.Flags().StringArrayVarP(&params, "parameter", "p", nil, "override argument NAME=VALUE; repeatable")
	}
	if archived {
		uidFlag(cmd, &uid)
	}
	return cmd
}

func splitParam(p string) (string, string, bool) {
	for i := range len(p) {
		if p[i] == '=' {
			return p[:i], p[i+1:], true
		}
	}
	return "", "", false
}

func newWorkflowGetCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "get NAME",
		Short: "Show a workflow and the tree of its nodes (-o json|yaml: the object with every node)",
		Long: "Show a workflow's phase, progress and duration, and the tree of its nodes. With\n" +
			"-o json or yaml the object is printed with every node in status.nodes, those the\n" +
			"server keeps outside the object included (read a page at a time). A workflow\n" +
			"no longer stored is read from the workflow archive.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withFormatAndClient(cmd, func(ctx context.Context, c *client.Client, format outputFormat) error {
				s, err := o.readWorkflowAnywhere(ctx, c, o.namespace, args[0])
				if err != nil {
					return err
				}
				if format == outJSON || format == outYAML {
					s.wf.Status.Nodes = make(map[string]v4.WfNodeStatus, len(s.nodes))
					for _, n := range s.nodes {
						s.wf.Status.Nodes[n.ID] = n
					}
					return printStructured(o.out(), format, s.wf)
				}
				o.printSnapshot(format, s)
				return nil
			})
		},
	}
}

// printSnapshot prints a workflow as `berth workflow get` does with -o name, or else as
// the tree of its nodes.
func (o *options) printSnapshot(format outputFormat, s *wfSnapshot) {
	if format == outName {
		fmt.Fprintln(o.out(), objectName(v4.KindWorkflow, s.wf.Metadata.Name))
		return
	}
	for _, l := range s.frame(o.env.now(), false, 0) {
		fmt.Fprintln(o.out(), l)
	}
}

// workflow writes a workflow's arguments and its node tree (describe.go calls it
// after the metadata).
func (d *describer) workflow(w *v4.Workflow) {
	st := w.Status
	d.kv("Entrypoint", "%s", orNone(w.Spec.Entrypoint))
	d.kv("Phase", "%s", orNone(st.Phase))
	if !st.StartedAt.IsZero() {
		d.kv("Started", "%s (%s)", st.StartedAt.Format(time.RFC3339), nodeDuration(st.StartedAt, st.FinishedAt, d.now))
	}
	if st.Message != "" {
		d.kv("Message", "%s", oneLine(st.Message))
	}
	d.priority(&w.Spec.Scheduling)
	d.nominated("step", st.Nominated)
	if w.Spec.Suspend {
		d.kv("Suspend", "true")
	}
	if a := w.Spec.Arguments; a != nil && len(a.Parameters) > 0 {
		d.section("Parameters", func() {
			for _, p := range a.Parameters {
				v := ""
				if p.Value != nil {
					v = *p.Value
				}
				d.line(p.Name + "=" + oneLine(v))
			}
		})
	}
	if d.wfNodes != nil {
		d.kv("Progress", "%s", wfProgress(d.wfNodes))
		d.section("Nodes", func() {
			for _, l := range renderTree(newWfTree(d.wfNodes).rows(d.now, false), 0) {
				d.line(l)
			}
		})
	}
}

// describeNodes reads a described workflow's nodes; without them the tree is left out.
func describeNodes(ctx context.Context, o *options, c *client.Client, wf *v4.Workflow) []v4.WfNodeStatus {
	nodes, err := c.AllWorkflowNodes(ctx, wf.Metadata.Namespace, wf.Metadata.Name, watchNodePage)
	if client.IsNotFound(err) {
		return inlineNodes(wf)
	}
	if err != nil {
		fmt.Fprintf(o.env.stderr, "warning: cannot read the workflow's nodes: %v\n", err)
		return nil
	}
	return nodes
}
