package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

func newJobCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "job",
		Short: "Read and act on jobs: logs, suspend, resume",
	}
	cmd.AddCommand(newJobLogsCommand(o), newJobSuspendCommand(o, true), newJobSuspendCommand(o, false))
	return cmd
}

// maxJobSuspendTries bounds the read-modify-write of spec.suspend against other writers.
const maxJobSuspendTries = 5

func newJobSuspendCommand(o *options, suspend bool) *cobra.Command {
	use, short, done := "suspend", "Suspend a job: its active runs are stopped and none starts until it is resumed", "suspended"
	if !suspend {
		use, short, done = "resume", "Resume a suspended job", "resumed"
	}
	return &cobra.Command{
		Use:   use + " NAME",
		Short: short,
		Long:  short + ".\nThis sets the job's spec.suspend (docs/jobs.md).",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				if err := setJobSuspend(ctx, c, o.namespace, args[0], suspend); err != nil {
					return fmt.Errorf("%s job %s: %w", use, args[0], err)
				}
				fmt.Fprintf(o.out(), "%s %s\n", objectName(v4.KindJob, args[0]), done)
				return nil
			})
		},
	}
}

// setJobSuspend writes spec.suspend with the job's revision as precondition, again after
// a conflict (another writer changed the job meanwhile).
func setJobSuspend(ctx context.Context, c *client.Client, ns, name string, suspend bool) error {
	for range maxJobSuspendTries {
		obj, err := c.Get(ctx, v4.KindJob, ns, name)
		if err != nil {
			return err
		}
		j, ok := obj.(*v4.Job)
		if !ok {
			return fmt.Errorf("the server answered a %s", obj.GetKind())
		}
		if j.Spec.Suspend == suspend {
			return nil
		}
		j.Spec.Suspend = suspend
		if _, err = c.Update(ctx, j); !client.IsConflict(err) {
			return err
		}
	}
	return fmt.Errorf("the job changed %d times while it was written; try again", maxJobSuspendTries)
}

func newJobLogsCommand(o *options) *cobra.Command {
	var f logsFlags
	cmd := &cobra.Command{
		Use:   "logs NAME",
		Short: "Print the output of a job's runs",
		Long: "Print the output of every run of a job that still has its task group, in index\n" +
			"order, each after a \"==> TASKGROUP <==\" line when there are several. -f follows\n" +
			"the newest run. A run whose task group is gone is listed with its exit code\n" +
			"(`berth describe job` shows what was kept of it).",
		Example: "  berth job logs train -n ml\n  berth job logs train -f",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				return jobLogs(ctx, cmd, o, c, args[0], f)
			})
		},
	}
	cmd.Flags().StringVarP(&f.task, "task", "t", "", "task (container or process) name; default the first")
	cmd.Flags().BoolVarP(&f.follow, "follow", "f", false, "follow the newest run's output")
	cmd.Flags().IntVar(&f.tail, "tail", 0, "only the last N lines of each run (0: all)")
	return cmd
}

func jobLogs(ctx context.Context, cmd *cobra.Command, o *options, c *client.Client, name string, f logsFlags) error {
	obj, err := c.Get(ctx, v4.KindJob, o.namespace, name)
	if err != nil {
		return err
	}
	j := obj.(*v4.Job)
	tgs, err := ownedTaskGroups(ctx, c, v4.KindJob, &j.Metadata)
	if err != nil {
		return fmt.Errorf("list the job's task groups: %w", err)
	}
	if f.follow {
		if len(tgs) == 0 {
			return fmt.Errorf("job %s has no run to follow", name)
		}
		newest := slices.MaxFunc(tgs, func(a, b *v4.TaskGroup) int {
			return a.Metadata.CreationTimestamp.Compare(b.Metadata.CreationTimestamp)
		})
		fmt.Fprintf(o.env.stderr, "following %s\n", newest.Metadata.Name)
		tgs, ctx = []*v4.TaskGroup{newest}, cmdContext(cmd)
	}
	have := map[string]bool{}
	for _, tg := range tgs {
		have[tg.Metadata.Name] = true
		if len(tgs) > 1 {
			fmt.Fprintf(o.out(), "==> %s <==\n", tg.Metadata.Name)
		}
		if err := copyLogs(ctx, o, c, tg.Metadata.Name, client.LogOptions{Task: f.task, Follow: f.follow, Tail: f.tail}); err != nil {
			fmt.Fprintf(o.env.stderr, "warning: %s: %v\n", tg.Metadata.Name, err)
		}
	}
	for _, r := range j.Status.Finished {
		if !have[r.TaskGroup] && !f.follow {
			fmt.Fprintf(o.env.stderr, "%s (index %d): %s, exit code %d; its task group is gone\n", r.TaskGroup, r.Index, r.Result, r.ExitCode)
		}
	}
	return nil
}

// copyLogs prints a task group's logs.
func copyLogs(ctx context.Context, o *options, c *client.Client, tg string, opts client.LogOptions) error {
	rc, err := c.Logs(ctx, o.namespace, tg, opts)
	if err != nil {
		return err
	}
	defer rc.Close()
	if _, err := io.Copy(o.out(), rc); err != nil && ctx.Err() == nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("read the logs: %w", err)
	}
	return nil
}
