package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// A finished workflow moves out of the objects into the workflow archive
// (docs/workflows.md, "The workflow archive"), and its own routes then answer 404. The
// `berth workflow` commands that read one (get, logs) or run an action the archive
// also has (retry, resubmit) then ask the archive, in orArchive alone.

// orArchive answers stored(); when that is a 404 it answers archived() instead, saying
// on stderr that workflow ns/name is archived. When the archive has none either, the
// first 404 is the answer: the workflow is nowhere.
func orArchive[T any](o *options, ns, name string, stored, archived func() (T, error)) (T, error) {
	v, err := stored()
	if !client.IsNotFound(err) {
		return v, err
	}
	av, aerr := archived()
	if client.IsNotFound(aerr) {
		return v, err
	}
	fmt.Fprintf(o.env.stderr, "workflow %s/%s is archived\n", ns, name)
	if aerr != nil {
		return av, fmt.Errorf("from the workflow archive: %w", aerr)
	}
	return av, nil
}

// readWorkflowAnywhere is readWorkflow, or the archived workflow of that name (the one
// archived last) with the nodes the archive keeps in it.
func (o *options) readWorkflowAnywhere(ctx context.Context, c *client.Client, ns, name string) (*wfSnapshot, error) {
	return orArchive(o, ns, name,
		func() (*wfSnapshot, error) { return readWorkflow(ctx, c, ns, name) },
		func() (*wfSnapshot, error) {
			e, err := c.GetArchivedWorkflow(ctx, ns, name, "")
			if err != nil {
				return nil, err
			}
			return archivedSnapshot(e), nil
		})
}

// archivedSnapshot is an archived workflow as a snapshot: its nodes are all in the object.
func archivedSnapshot(e *v4.ArchivedWorkflow) *wfSnapshot {
	return &wfSnapshot{wf: e.Workflow, nodes: inlineNodes(e.Workflow)}
}

// runWorkflowAction runs action on workflow ns/name and answers the workflow it
// answered: the archived one's of uid when archived (`berth workflow archive retry`),
// else the stored one's, and for an action the archive has, the archived one's when none
// is stored.
func (o *options) runWorkflowAction(ctx context.Context, c *client.Client, name, action, uid string, archived bool, req client.WorkflowActionRequest) (*v4.Workflow, error) {
	ns := o.namespace
	fromArchive := func() (*v4.Workflow, error) { return c.ArchivedWorkflowAction(ctx, ns, name, uid, action, req) }
	stored := func() (*v4.Workflow, error) { return c.WorkflowAction(ctx, ns, name, action, req) }
	switch {
	case archived:
		return fromArchive()
	case archiveHas(action):
		return orArchive(o, ns, name, stored, fromArchive)
	}
	return stored()
}

// archiveHas reports whether the archive's actions route takes action.
func archiveHas(action string) bool {
	for _, a := range workflowActions {
		if a.name == action {
			return a.archived != ""
		}
	}
	return false
}

// uidFlag adds --uid, which picks one of the archived workflows of a name.
func uidFlag(cmd *cobra.Command, uid *string) {
	cmd.Flags().StringVar(uid, "uid", "", "the archived workflow of this status.uid (default: the one of NAME archived last)")
}

// checkUID refuses, before any request, a --uid the archive would not take as a
// workflow's status.uid.
func checkUID(uid string) error {
	bad := strings.ContainsFunc(uid, func(r rune) bool { return r == '/' || r < 0x20 || r == 0x7f })
	if len(uid) > 64 || bad {
		return fmt.Errorf("--uid %q: not a workflow's status.uid (at most 64 characters, no \"/\" and no control characters)", uid)
	}
	return nil
}
