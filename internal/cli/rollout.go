package cli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

func newRolloutCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Follow and steer a deployment's rolling update",
		Long: "Follow and steer a deployment's rolling update (docs/deployments.md).\n\n" +
			"Each subcommand takes the deployment as NAME, deployment NAME or deployment/NAME.",
	}
	cmd.AddCommand(newRolloutStatusCommand(o), newRolloutHistoryCommand(o),
		newRolloutActionCommand(o, "pause", "Pause a rollout after the step in progress"),
		newRolloutActionCommand(o, "resume", "Resume a paused or suspended rollout"),
		newRolloutActionCommand(o, "undo", "Roll back to an earlier revision's template (default: the previous one)"))
	return cmd
}

// deploymentArg reads NAME, "deployment NAME" or "deployment/NAME".
func deploymentArg(args []string) (string, error) {
	kind, name := "", args[0]
	if len(args) == 2 {
		kind, name = args[0], args[1]
	} else if k, n, ok := strings.Cut(args[0], "/"); ok {
		kind, name = k, n
	}
	if kind != "" {
		if k, err := v4.ParseKind(kind); err != nil || k != v4.KindDeployment {
			return "", fmt.Errorf("rollout works on deployments, got %q", kind)
		}
	}
	if name == "" {
		return "", fmt.Errorf("a deployment NAME is required")
	}
	return name, nil
}

func newRolloutActionCommand(o *options, action, short string) *cobra.Command {
	var to int
	cmd := &cobra.Command{
		Use:   action + " [deployment] NAME",
		Short: short,
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := deploymentArg(args)
			if err != nil {
				return err
			}
			var q url.Values
			if to > 0 {
				q = url.Values{"revision": {strconv.Itoa(to)}}
			}
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				res, err := c.Operate(ctx, v4.KindDeployment, o.namespace, name, "rollout/"+action, q, nil)
				if err != nil {
					return err
				}
				msg := map[string]string{"pause": "rollout paused", "resume": "rollout resumed", "undo": "rolling back"}[action]
				if res.Operation != nil && action == "undo" {
					msg = res.Operation.Message
				}
				fmt.Fprintf(o.out(), "deployment/%s: %s (follow it: berth rollout status %s -w -n %s)\n", name, msg, name, o.namespace)
				return nil
			})
		},
	}
	if action == "undo" {
		cmd.Flags().IntVar(&to, "to-revision", 0, "the revision to go back to (see `berth rollout history`); default the previous one")
	}
	return cmd
}

func newRolloutStatusCommand(o *options) *cobra.Command {
	var watch bool
	cmd := &cobra.Command{
		Use:   "status [deployment] NAME",
		Short: "Show a deployment's rollout: revision, phase, new and old instances, availability",
		Long: "Show a deployment's rollout. With -w, print each change until the rollout is done\n" +
			"(exit 0), paused (exit 0) or suspended by berth (exit 1).",
		Example: "  berth rollout status web -w -n demo",
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := deploymentArg(args)
			if err != nil {
				return err
			}
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				if watch { // followed until the rollout ends: not bounded by --request-timeout
					return followRollout(cmdContext(cmd), o, c, name)
				}
				obj, err := c.Get(ctx, v4.KindDeployment, o.namespace, name)
				if err != nil {
					return err
				}
				printRollout(o.out(), obj.(*v4.Deployment))
				return nil
			})
		},
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "follow the rollout until it is done, paused or suspended")
	return cmd
}

// printRollout shows the rollout as a few lines.
func printRollout(w io.Writer, d *v4.Deployment) {
	st := d.Status
	fmt.Fprintf(w, "deployment/%s: revision %d, %s", d.Metadata.Name, st.Revision, orNone(st.Phase))
	if st.Paused {
		fmt.Fprint(w, " (paused)")
	}
	fmt.Fprintf(w, "\n  updated %d/%d (%d available), old %d, available %d/%d\n",
		st.Current, d.Spec.Instance, st.CurrentAvailable, st.Old, st.Available, d.Spec.Instance)
	if st.Message != "" {
		fmt.Fprintf(w, "  %s\n", st.Message)
	}
}

// rolloutLine is one line of `rollout status -w`.
func rolloutLine(d *v4.Deployment) string {
	st := d.Status
	line := fmt.Sprintf("revision %d %s: updated %d/%d (%d available), old %d, available %d/%d",
		st.Revision, orNone(st.Phase), st.Current, d.Spec.Instance, st.CurrentAvailable, st.Old, st.Available, d.Spec.Instance)
	if st.Message != "" {
		line += " - " + st.Message
	}
	return line
}

// rolloutDone reports whether the rollout has finished: every instance available on
// the current revision, nothing old left.
func rolloutDone(d *v4.Deployment) bool {
	st := d.Status
	settled := st.Phase == v4.DeploymentRunning || d.Spec.Instance == 0 && st.Phase == v4.DeploymentStopped
	return settled && st.Old == 0 && st.CurrentAvailable >= d.Spec.Instance &&
		st.Revision > 0 && st.RevisionOf(st.Revision) != nil && st.RevisionOf(st.Revision).Hash == v4.TemplateHash(d.Spec.Template)
}

// followRollout prints every change of the deployment's rollout until it ends.
func followRollout(ctx context.Context, o *options, c *client.Client, name string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := c.Watch(ctx, v4.KindDeployment, o.namespace, "")
	if err != nil {
		return err
	}
	w, last, found := o.out(), "", false
	for ev := range events {
		if ev.Err != nil {
			return ev.Err
		}
		d, ok := ev.Object.(*v4.Deployment)
		if !ok || d.Metadata.Name != name {
			continue
		}
		found = true
		if ev.Type == client.EventDeleted {
			return fmt.Errorf("deployment %s/%s was deleted", o.namespace, name)
		}
		if line := rolloutLine(d); line != last {
			fmt.Fprintf(w, "%s %s\n", o.env.now().Format("15:04:05"), line)
			last = line
		}
		switch {
		case rolloutDone(d):
			fmt.Fprintf(w, "deployment/%s successfully rolled out (revision %d)\n", name, d.Status.Revision)
			return nil
		case d.Status.Phase == v4.DeploymentUpdateSuspend:
			return &ExitError{Code: 1, Message: fmt.Sprintf("deployment/%s: rollout suspended: %s", name, d.Status.Message)}
		case d.Status.Paused && d.Status.Phase == v4.DeploymentUpdatePaused:
			fmt.Fprintf(w, "deployment/%s: rollout paused; resume it with `berth rollout resume %s`\n", name, name)
			return nil
		}
	}
	if !found {
		return fmt.Errorf("deployment %s/%s not found", o.namespace, name)
	}
	return ctx.Err()
}

func newRolloutHistoryCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "history [deployment] NAME",
		Short: "List the revisions a deployment keeps (the last 10), the current one marked *",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := deploymentArg(args)
			if err != nil {
				return err
			}
			return o.withFormatAndClient(cmd, func(ctx context.Context, c *client.Client, format outputFormat) error {
				h, err := c.DeploymentHistory(ctx, o.namespace, name)
				if err != nil {
					return err
				}
				if format == outJSON || format == outYAML {
					return printStructured(o.out(), format, h)
				}
				rows := make([][]string, 0, len(h.Items))
				for _, r := range h.Items {
					rev := strconv.Itoa(r.Revision)
					if r.Revision == h.Current {
						rev += "*"
					}
					rows = append(rows, []string{rev, r.Hash, orNone(r.Cause), taskSummary(&r.Template.Spec), age(r.Created, o.env.now())})
				}
				return writeTable(o.out(), []string{"REVISION", "HASH", "CAUSE", "TASKS", "AGE"}, rows)
			})
		},
	}
}
