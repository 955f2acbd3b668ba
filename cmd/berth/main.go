// Command berth is the berth CLI, server and agent in one binary; the commands live in
// internal/cli.
package main

import (
	"fmt"
	"os"

	"github.com/berthhq/berth/internal/cli"
)

func main() {
	if err := cli.NewRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
