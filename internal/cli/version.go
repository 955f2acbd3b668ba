package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is the release, set at build time with
// -ldflags "-X github.com/berthhq/berth/internal/cli.Version=v0.1.0".
var Version = "dev"

func newVersionCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of berth",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(o.out(), versionString())
			return err
		},
	}
}

// versionString adds the commit the binary was built from, when Go recorded it.
func versionString() string {
	s := fmt.Sprintf("berth %s (%s, %s/%s)", Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if info, ok := debug.ReadBuildInfo(); ok {
		var rev, dirty string
		for _, kv := range info.Settings {
			switch kv.Key {
			case "vcs.revision":
				rev = kv.Value
			case "vcs.modified":
				if kv.Value == "true" {
					dirty = "-dirty"
				}
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			s += " commit " + rev + dirty
		}
	}
	return s
}
