package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/internal/client"
)

type execFlags struct {
	task  string
	stdin bool
	tty   bool
}

func newExecCommand(o *options) *cobra.Command {
	var f execFlags
	cmd := &cobra.Command{
		Use:   "exec TASKGROUP [-t TASK] [-i] [--tty] -- COMMAND [ARGS...]",
		Short: "Run a command in a task of a task group",
		Long: "Run a command in a container (docker exec) or in a process's context, through the\n" +
			"server and the agent of the task group's node, and exit with the command's status.\n\n" +
			"-i sends this terminal's input to the command, --tty attaches a terminal\n" +
			"(containers only), -it both; -t names the task (default: the first task).",
		Example: "  berth exec 0.web.ns-a.cluster.1700000000 -n ns-a -- env\n" +
			"  berth exec -it 0.web.ns-a.cluster.1700000000 -n ns-a -t side -- sh",
		// Flags are parsed in RunE: -it must mean -i --tty, while -t alone names the
		// task (as in berth logs), which pflag's shorthand grouping cannot express.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.DisableFlagParsing = false
			if err := cmd.ParseFlags(expandIT(args)); err != nil {
				return fmt.Errorf("%w\nsee berth exec --help", err)
			}
			if help, _ := cmd.Flags().GetBool("help"); help {
				return cmd.Help()
			}
			pos := cmd.Flags().Args()
			dash := cmd.Flags().ArgsLenAtDash()
			if len(pos) < 2 || dash != 1 {
				return errors.New("usage: berth exec TASKGROUP [-t TASK] [-i] [--tty] -- COMMAND [ARGS...]")
			}
			return runExec(cmd, o, f, pos[0], pos[1:])
		},
	}
	cmd.Flags().StringVarP(&f.task, "task", "t", "", "task (container or process) name; default the first")
	cmd.Flags().BoolVarP(&f.stdin, "stdin", "i", false, "send this terminal's input to the command")
	cmd.Flags().BoolVar(&f.tty, "tty", false, "attach a terminal (containers only)")
	cmd.Flags().BoolP("help", "h", false, "help for exec")
	return cmd
}

// expandIT rewrites -it and -ti (before "--") into -i --tty.
func expandIT(args []string) []string {
	out := make([]string, 0, len(args)+1)
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if a == "-it" || a == "-ti" {
			out = append(out, "-i", "--tty")
			continue
		}
		out = append(out, a)
	}
	return out
}

func runExec(cmd *cobra.Command, o *options, f execFlags, tg string, command []string) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	// A session lasts as long as the command: no request timeout.
	ctx := cmdContext(cmd)
	opts := client.ExecOptions{Task: f.task, Cmd: command, TTY: f.tty, Stdout: o.out()}
	if f.stdin {
		opts.Stdin = o.env.stdin
	}
	if in, ok := o.env.stdin.(*os.File); ok && f.tty && isTerminal(in) {
		restore, err := makeRaw(in)
		if err != nil {
			return fmt.Errorf("put the terminal in raw mode: %w", err)
		}
		defer restore()
		resize, stop := watchSize(in)
		defer stop()
		opts.Resize = resize
		// In raw mode the remote terminal does the line endings: pass output as it is.
		if out, ok := o.out().(*os.File); ok {
			opts.Stdout = out
		}
	}
	code, err := c.Exec(ctx, o.namespace, tg, opts)
	if err != nil {
		return err
	}
	if code != 0 {
		return &ExitError{Code: code}
	}
	return nil
}
