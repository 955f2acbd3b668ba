package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// mainLogsArtifact is the artifact a finished step's log is kept as (api/v4 StepIO.LogsKey).
const mainLogsArtifact = "main-logs"

func newWorkflowLogsCommand(o *options) *cobra.Command {
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs NAME [NODE]",
		Short: "Print the logs of a workflow's steps",
		Long: "Print the log of the main task of each step (Pod node) of a workflow, or of NODE\n" +
			"alone (its ID, its full name or its display name), in the order they started,\n" +
			"each after a \"==> NODE <==\" line when there are several. A running step's log is\n" +
			"read from its task group on its node; a finished one's from the log the agent kept\n" +
			"as the step's main-logs artifact, so it outlives the task group. -f follows NODE,\n" +
			"or the step that started last while it runs. A workflow no longer stored is\n" +
			"read from the workflow archive, whose steps' logs are kept.",
		Example: "  berth workflow logs pipeline\n  berth workflow logs pipeline train -f",
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				s, err := o.readWorkflowAnywhere(ctx, c, o.namespace, args[0])
				if err != nil {
					return err
				}
				nodes, err := logNodes(s.nodes, args[1:], follow)
				if err != nil {
					return fmt.Errorf("workflow %s: %w", args[0], err)
				}
				if follow { // the stream lasts until the user stops it
					ctx = cmdContext(cmd)
				}
				for _, n := range nodes {
					if len(nodes) > 1 {
						fmt.Fprintf(o.out(), "==> %s <==\n", n.Name)
					}
					if err := stepLog(ctx, o, c, s.wf, n, follow); err != nil {
						fmt.Fprintf(o.env.stderr, "warning: %s: %v\n", n.Name, err)
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep streaming a running step's log")
	return cmd
}

// logNodes picks the Pod nodes whose logs are printed, in the order they started.
func logNodes(all []v4.WfNodeStatus, want []string, follow bool) ([]v4.WfNodeStatus, error) {
	var pods []v4.WfNodeStatus
	t := newWfTree(all)
	for _, id := range t.order() {
		if n := t.nodes[id]; n.Type == v4.WfNodePod {
			pods = append(pods, n)
		}
	}
	if len(want) == 1 {
		var match []v4.WfNodeStatus
		for _, n := range pods {
			if n.ID == want[0] || n.Name == want[0] || n.DisplayName == want[0] {
				match = append(match, n)
			}
		}
		switch {
		case len(match) == 0:
			return nil, fmt.Errorf("no step %q (berth workflow get lists them)", want[0])
		case len(match) > 1 && follow:
			names := make([]string, len(match))
			for i, n := range match {
				names[i] = n.Name
			}
			return nil, fmt.Errorf("%q names %d steps: give one of %s", want[0], len(match), strings.Join(names, ", "))
		}
		return match, nil
	}
	if !follow {
		// Steps not started yet have no log to print.
		started := pods[:0:0]
		for _, n := range pods {
			if n.TaskGroup != "" || v4.WfPhaseFinished(n.Phase) {
				started = append(started, n)
			}
		}
		return started, nil
	}
	for i := len(pods) - 1; i >= 0; i-- {
		if !v4.WfPhaseFinished(pods[i].Phase) && pods[i].TaskGroup != "" {
			return pods[i : i+1], nil
		}
	}
	return nil, errors.New("no step is running: give NODE to print a finished one")
}

// stepLog prints one step's log: the stored main-logs once it finished, else its task
// group's (also when the stored one is missing while the task group is still there).
func stepLog(ctx context.Context, o *options, c *client.Client, wf *v4.Workflow, n v4.WfNodeStatus, follow bool) error {
	if v4.WfPhaseFinished(n.Phase) {
		rc, err := c.WorkflowArtifact(ctx, wf.Metadata.Namespace, wf.Metadata.Name, n.ID, mainLogsArtifact)
		if err == nil {
			defer rc.Close()
			if _, err := io.Copy(o.out(), rc); err != nil && ctx.Err() == nil {
				return fmt.Errorf("read the stored log: %w", err)
			}
			return nil
		}
		if !client.IsNotFound(err) {
			return err
		}
		if n.TaskGroup == "" { // no task ran (a resource step, or a step that could not start)
			fmt.Fprintf(o.out(), "(no log: %s %s)\n", n.Phase, n.Message)
			return nil
		}
	}
	if n.TaskGroup == "" {
		return errors.New("not started yet")
	}
	task := ""
	if obj, err := c.Get(ctx, v4.KindTaskGroup, wf.Metadata.Namespace, n.TaskGroup); err == nil {
		if tg, ok := obj.(*v4.TaskGroup); ok && tg.Spec.Step != nil {
			task = tg.Spec.Step.Main
		}
	}
	return copyLogs(ctx, o, c, n.TaskGroup, client.LogOptions{Task: task, Follow: follow})
}
