package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/internal/server"
)

// serverFlags are the flags of `berth server` and `berth dev`.
type serverFlags struct {
	listen        string
	dataDir       string
	etcdEndpoints []string
	logLevel      string
	placement     string
}

func (f *serverFlags) register(cmd *cobra.Command, dataDirHelp string) {
	cmd.Flags().StringVar(&f.listen, "listen", server.DefaultListen, "address to serve the API on")
	cmd.Flags().StringVar(&f.dataDir, "data-dir", "", dataDirHelp)
	cmd.Flags().StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	cmd.Flags().StringVar(&f.placement, "placement", "spread", "cluster-wide placement: spread (emptiest node first) or binpack (fullest node that fits)")
}

func newServerCommand(o *options) *cobra.Command {
	var f serverFlags
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a berth API server",
		Long: "Run a berth API server. State is kept in an embedded etcd under --data-dir,\n" +
			"or in an external etcd cluster given with --etcd-endpoints.",
		Example: "  berth server --data-dir /var/lib/berth\n" +
			"  berth server --listen 0.0.0.0:7470 --etcd-endpoints http://etcd-0:2379,http://etcd-1:2379",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.dataDir == "" && len(f.etcdEndpoints) == 0 {
				return fmt.Errorf("give --data-dir (embedded etcd) or --etcd-endpoints (external etcd)")
			}
			return runServer(cmd, o, f, func(addr string) {
				fmt.Fprintf(o.out(), "berth server listening on %s\n", addr)
			})
		},
	}
	f.register(cmd, "directory of the embedded etcd's data")
	cmd.Flags().StringSliceVar(&f.etcdEndpoints, "etcd-endpoints", nil, "external etcd endpoints, comma separated (instead of the embedded etcd)")
	return cmd
}

func newDevCommand(o *options) *cobra.Command {
	var f serverFlags
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local single-node berth with its data in one directory",
		Long: "Run a local berth for development: a server with an embedded etcd, its data in\n" +
			"--data-dir (default $HOME/.berth/dev). Stop it with Ctrl-C; the data stays.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.dataDir == "" {
				home, err := o.env.home()
				if err != nil {
					return fmt.Errorf("no home directory for the default data dir; give --data-dir: %w", err)
				}
				f.dataDir = filepath.Join(home, ".berth", "dev")
			}
			// 0700: the data dir holds every secret of the cluster.
			if err := os.MkdirAll(f.dataDir, 0o700); err != nil {
				return fmt.Errorf("create data dir: %w", err)
			}
			return runServer(cmd, o, f, func(addr string) {
				devBanner(o.out(), addr, f.dataDir)
			})
		},
	}
	f.register(cmd, "data directory (default $HOME/.berth/dev)")
	return cmd
}

// runServer runs server.Run until SIGINT or SIGTERM, logging to stderr.
func runServer(cmd *cobra.Command, o *options, f serverFlags, onReady func(addr string)) error {
	if f.placement != "spread" && f.placement != "binpack" {
		return fmt.Errorf("--placement %q: use spread or binpack", f.placement)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: use debug, info, warn or error", f.logLevel)
	}
	logger := slog.New(slog.NewTextHandler(o.env.stderr, &slog.HandlerOptions{Level: level}))
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return server.Run(ctx, server.Config{
		Listen:        f.listen,
		DataDir:       f.dataDir,
		EtcdEndpoints: f.etcdEndpoints,
		Logger:        logger,
		OnReady:       onReady,
		Placement:     f.placement,
	})
}

// devBanner tells a new user where berth runs and what to try first.
func devBanner(w io.Writer, addr, dataDir string) {
	url := "http://" + addr
	env := ""
	if addr != server.DefaultListen { // clients find the default address by themselves
		env = fmt.Sprintf("  (other shells: export BERTH_SERVER=%s)\n", url)
	}
	fmt.Fprintf(w, `
berth dev is running.
  API:      %s
  data dir: %s
%s
Try:
  berth apply -f examples/
  berth get apps -A
  berth events -w

Stop with Ctrl-C (the data stays in the data dir).

`, url, dataDir, env)
}
