package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

type logsFlags struct {
	task           string
	follow         bool
	tail           int
	stdout, stderr bool
	timestamps     bool
}

// stream is the stream the flags select: "" for both.
func (f logsFlags) stream() string {
	switch {
	case f.stdout:
		return v4.LogStreamStdout
	case f.stderr:
		return v4.LogStreamStderr
	}
	return ""
}

func newLogsCommand(o *options) *cobra.Command {
	var f logsFlags
	cmd := &cobra.Command{
		Use:   "logs TASKGROUP",
		Short: "Print the output of a task of a task group",
		Long: "Print the stdout and stderr of a task of a task group (the first task unless -t\n" +
			"names one), in the order they were written, read from the agent of the task\n" +
			"group's node through the server. --stdout or --stderr prints that stream alone;\n" +
			"--timestamps prefixes each line with the time it was written. Task group names\n" +
			"are listed by `berth get taskgroups`.",
		Example: "  berth logs 0.gamesvc.ns-a.cluster.1700000000 -n ns-a\n" +
			"  berth logs 0.gamesvc.ns-a.cluster.1700000000 -n ns-a -t gamesvc -f --tail 100\n" +
			"  berth logs 0.gamesvc.ns-a.cluster.1700000000 -n ns-a --stderr --timestamps",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.tail < 0 {
				return fmt.Errorf("--tail %d: give a number of lines (0 for all)", f.tail)
			}
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				if f.follow { // the stream lasts until the user stops it: no request timeout
					ctx = cmdContext(cmd)
				}
				rc, err := c.Logs(ctx, o.namespace, args[0], client.LogOptions{
					Task: f.task, Follow: f.follow, Tail: f.tail, Stream: f.stream(), Timestamps: f.timestamps,
				})
				if err != nil {
					return err
				}
				defer rc.Close()
				if _, err := io.Copy(o.out(), rc); err != nil && ctx.Err() == nil && !errors.Is(err, io.ErrUnexpectedEOF) {
					return fmt.Errorf("read the logs: %w", err)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVarP(&f.task, "task", "t", "", "task (container or process) name; default the first")
	cmd.Flags().BoolVarP(&f.follow, "follow", "f", false, "keep streaming new output")
	cmd.Flags().IntVar(&f.tail, "tail", 0, "only the last N lines, of the stream(s) printed (0: all)")
	cmd.Flags().BoolVar(&f.stdout, "stdout", false, "print the task's stdout alone")
	cmd.Flags().BoolVar(&f.stderr, "stderr", false, "print the task's stderr alone")
	cmd.Flags().BoolVar(&f.timestamps, "timestamps", false, "prefix each line with the time it was written (RFC 3339, UTC)")
	cmd.MarkFlagsMutuallyExclusive("stdout", "stderr")
	return cmd
}

// newActionCommand builds `berth reload` and `berth restart`: a process's reloadCmd or
// restartCmd, run by the agent of the task group's node.
func newActionCommand(o *options, action, short, done string) *cobra.Command {
	var task string
	cmd := &cobra.Command{
		Use:   action + " TASKGROUP",
		Short: short,
		Long: short + ", on one task (-t) or on every task of the task group in order.\n" +
			"The agent of the task group's node runs the command; its failure is reported.",
		Example: fmt.Sprintf("  berth %s 0.gamesvc.ns-a.cluster.1700000000 -n ns-a -t gamesvc", action),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				if err := c.Action(ctx, o.namespace, args[0], task, action); err != nil {
					return err
				}
				fmt.Fprintf(o.out(), "taskgroup/%s %s\n", args[0], done)
				return nil
			})
		},
	}
	cmd.Flags().StringVarP(&task, "task", "t", "", "task (process) name; default every task")
	return cmd
}

func newSignalCommand(o *options) *cobra.Command {
	var task string
	cmd := &cobra.Command{
		Use:   "signal TASKGROUP SIGNAL",
		Short: "Send a signal to the main process of a task group's tasks",
		Long: "Send a signal (a number, or a name such as HUP, TERM, USR1) to the main process of\n" +
			"one task (-t) or of every task of the task group in order: a container's first\n" +
			"process, a process task's own (its pid file's).",
		Example: "  berth signal 0.gamesvc.ns-a.cluster.1700000000 HUP -n ns-a\n" +
			"  berth signal 0.gamesvc.ns-a.cluster.1700000000 USR1 -n ns-a -t gamesvc",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := v4.ParseSignal(args[1]); err != nil {
				return err
			}
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				if err := c.Signal(ctx, o.namespace, args[0], task, args[1]); err != nil {
					return err
				}
				fmt.Fprintf(o.out(), "taskgroup/%s signalled\n", args[0])
				return nil
			})
		},
	}
	cmd.Flags().StringVarP(&task, "task", "t", "", "task name; default every task")
	return cmd
}
