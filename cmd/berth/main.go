// Command berth is the berth CLI, server and agent in one binary; the commands live in
// internal/cli.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/berthhq/berth/internal/cli"
	"github.com/berthhq/berth/internal/driver/containerd"
	"github.com/berthhq/berth/internal/shim"
)

func main() {
	// A shim (one per process task) needs none of the CLI: it starts before it.
	shim.RunIfCalled()
	// Nor does the logger the containerd shims start for each container task.
	containerd.RunLoggerIfCalled()
	if err := cli.NewRootCommand().Execute(); err != nil {
		// An ExitError is an outcome with its own status (berth plan: 2), already printed.
		if ee, ok := errors.AsType[*cli.ExitError](err); ok {
			if ee.Message != "" {
				fmt.Fprintln(os.Stderr, ee.Message)
			}
			os.Exit(ee.Code)
		}
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
