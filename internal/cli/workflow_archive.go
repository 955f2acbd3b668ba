package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// `berth workflow archive`: the finished workflows moved out of the objects
// (docs/workflows.md, "The workflow archive"), listed, read, deleted, resubmitted and
// retried through the archive's routes.

// maxArchivePages bounds the pages a list reads: a server that always answers a continue
// token must not keep the CLI reading for ever.
const maxArchivePages = 10000

func newWorkflowArchiveCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "archive",
		Short: "Read and act on archived workflows: list, get, delete, resubmit, retry",
		Long: "Finished workflows move out of the stored objects into the workflow archive\n" +
			"(--workflow-archive-after of the server). These commands read and act on it;\n" +
			"several workflows of one name may be archived, and --uid picks one by its\n" +
			"status.uid (default: the one archived last).",
	}
	cmd.AddCommand(newArchiveListCommand(o), newArchiveGetCommand(o), newArchiveDeleteCommand(o))
	for _, a := range workflowActions {
		if a.archived != "" {
			cmd.AddCommand(newWorkflowActionCommand(o, a.name, a.archived, a.done, true))
		}
	}
	return cmd
}

func newArchiveListCommand(o *options) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List a namespace's archived workflows, in name order (-o wide adds DURATION and MESSAGE)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return fmt.Errorf("--limit %d: give 0 (every one) or more", limit)
			}
			format, wide, err := archiveListFormat(o.output)
			if err != nil {
				return err
			}
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				items, err := listArchived(ctx, c, o.namespace, limit)
				if err != nil {
					return fmt.Errorf("list the workflow archive of %s: %w", o.namespace, err)
				}
				return o.printArchived(format, wide, items)
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "list at most N (0: every one, read a page at a time)")
	return cmd
}

// archiveListFormat reads -o of the list: wide (a table with more columns) or a format
// every command takes.
func archiveListFormat(s string) (outputFormat, bool, error) {
	if strings.EqualFold(strings.TrimSpace(s), "wide") {
		return outTable, true, nil
	}
	f, err := parseOutput(s)
	if err != nil {
		return "", false, fmt.Errorf("%w; the archive's list also takes wide", err)
	}
	return f, false, nil
}

// listArchived reads namespace ns's archive a page at a time: every entry, or the first
// limit (> 0).
func listArchived(ctx context.Context, c *client.Client, ns string, limit int) ([]v4.ArchivedWorkflow, error) {
	var out []v4.ArchivedWorkflow
	cont := ""
	for range maxArchivePages {
		want := v4.ArchivedWorkflowListMax
		if limit > 0 {
			want = min(want, limit-len(out))
		}
		page, err := c.ArchivedWorkflows(ctx, ns, want, cont)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if limit > 0 && len(out) >= limit {
			return out[:limit], nil
		}
		if page.Continue == "" || page.Continue == cont {
			return out, nil
		}
		cont = page.Continue
	}
	return nil, fmt.Errorf("more than %d pages", maxArchivePages)
}

func (o *options) printArchived(format outputFormat, wide bool, items []v4.ArchivedWorkflow) error {
	switch format {
	case outJSON, outYAML:
		return printStructured(o.out(), format, v4.ArchivedWorkflowList{Items: items})
	case outName:
		for _, e := range items {
			fmt.Fprintln(o.out(), objectName(v4.KindWorkflow, e.Workflow.Metadata.Name))
		}
		return nil
	}
	header := []string{"NAME", "UID", "PHASE", "PROGRESS", "FINISHED", "ARCHIVED", "EXPIRES"}
	if wide {
		header = append(header, "DURATION", "MESSAGE")
	}
	now := o.env.now()
	rows := make([][]string, 0, len(items))
	for _, e := range items {
		rows = append(rows, archivedRow(e, now, wide))
	}
	return writeTable(o.out(), header, rows)
}

// archivedRow is an entry's row: the columns of the workflows table that a finished
// workflow needs, and when it moved into the archive and leaves it.
func archivedRow(e v4.ArchivedWorkflow, now time.Time, wide bool) []string {
	w := e.Workflow
	st := w.Status
	progress := st.Progress // the list's workflows have no nodes to count
	if progress == "" && len(st.Nodes) > 0 {
		progress = wfProgress(inlineNodes(w))
	}
	row := []string{w.Metadata.Name, orNone(oneLine(st.UID)), orNone(st.Phase), orNone(progress),
		agoOrNone(st.FinishedAt, now), agoOrNone(e.ArchivedAt, now), expiresIn(e.ExpiresAt, now)}
	if wide {
		row = append(row, orNone(nodeDuration(st.StartedAt, st.FinishedAt, now)), orNone(shortMessage(st.Message)))
	}
	return row
}

func agoOrNone(t, now time.Time) string {
	if t.IsZero() {
		return none
	}
	return age(t, now) + " ago"
}

// expiresIn is when an entry leaves the archive: never without a TTL, "now" once due
// (the sweep runs every few minutes).
func expiresIn(t, now time.Time) string {
	switch {
	case t.IsZero():
		return "never"
	case !t.After(now):
		return "now"
	}
	return "in " + humanDuration(t.Sub(now))
}

func newArchiveGetCommand(o *options) *cobra.Command {
	var uid string
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Show an archived workflow and the tree of its nodes (-o json|yaml: the archive's entry, every node in it)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkUID(uid); err != nil {
				return err
			}
			return o.withFormatAndClient(cmd, func(ctx context.Context, c *client.Client, format outputFormat) error {
				e, err := c.GetArchivedWorkflow(ctx, o.namespace, args[0], uid)
				if err != nil {
					return fmt.Errorf("archived workflow %s: %w", args[0], err)
				}
				if format == outJSON || format == outYAML {
					return printStructured(o.out(), format, e)
				}
				if format == outTable {
					now := o.env.now()
					fmt.Fprintf(o.out(), "archived %s ago, uid %s, expires %s\n",
						age(e.ArchivedAt, now), orNone(oneLine(e.Workflow.Status.UID)), expiresIn(e.ExpiresAt, now))
				}
				o.printSnapshot(format, archivedSnapshot(e))
				return nil
			})
		},
	}
	uidFlag(cmd, &uid)
	return cmd
}

func newArchiveDeleteCommand(o *options) *cobra.Command {
	var uid string
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete an archived workflow (the artifact collector then removes its kept logs and artifacts)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkUID(uid); err != nil {
				return err
			}
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				e, err := c.DeleteArchivedWorkflow(ctx, o.namespace, args[0], uid)
				if err != nil {
					return fmt.Errorf("delete archived workflow %s: %w", args[0], err)
				}
				fmt.Fprintf(o.out(), "%s (uid %s) deleted from the archive\n",
					objectName(v4.KindWorkflow, args[0]), orNone(oneLine(e.Workflow.Status.UID)))
				return nil
			})
		},
	}
	uidFlag(cmd, &uid)
	return cmd
}
