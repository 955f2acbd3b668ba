package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/internal/agent"
	"github.com/berthhq/berth/internal/logfile"
)

// agentLogFlags bound the tasks' logs on the node, for `berth agent` and the agent of
// `berth dev` (docs/agent.md, "Task logs"): a tenant's chatty task must not fill the
// node's disk.
type agentLogFlags struct {
	maxSize  string
	maxFiles int
}

func (f *agentLogFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.maxSize, "log-max-size", "10MiB",
		"size at which a task's log is rotated (process tasks, and containers on Docker's json-file or local log driver): bytes, KiB, MiB or GiB, at least 64KiB")
	fl.IntVar(&f.maxFiles, "log-max-files", logfile.DefaultMaxFiles,
		fmt.Sprintf("files a task's log keeps, the live one and the rotated ones, 2-%d: at most log-max-size x log-max-files on disk", logfile.MaxMaxFiles))
}

// apply puts the flags (or the config file's keys) into cfg, checked.
func (f *agentLogFlags) apply(cfg *agent.Config, file *agentFile, changed func(string) bool) error {
	size, files := f.maxSize, f.maxFiles
	if !changed("log-max-size") && file.LogMaxSize != "" {
		size = file.LogMaxSize
	}
	if !changed("log-max-files") && file.LogMaxFiles != 0 {
		files = file.LogMaxFiles
	}
	n, err := parseBytes(size)
	if err != nil {
		return fmt.Errorf("--log-max-size %q: %w", size, err)
	}
	lim := logfile.Limits{MaxBytes: n, MaxFiles: files}
	if err := lim.Check(); err != nil {
		return err
	}
	cfg.LogLimits = lim
	return nil
}
