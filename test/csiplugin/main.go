// Command csiplugin runs berth's directory-backed test CSI plugin (internal/csi/csitest)
// as a program, the way a storage vendor's plugin runs: berth's end-to-end tests start it
// as a daemonset on each node, listening on the socket the agent gives it (CSI_ENDPOINT).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/berthhq/berth/internal/csi/csitest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "csiplugin:", err)
		os.Exit(1)
	}
}

func run() error {
	var opts csitest.Options
	endpoint := flag.String("endpoint", os.Getenv("CSI_ENDPOINT"), "unix://<socket> to serve on (default $CSI_ENDPOINT)")
	flag.StringVar(&opts.Name, "name", csitest.DefaultName, "the plugin's name")
	flag.StringVar(&opts.NodeID, "nodeid", os.Getenv("BERTH_NODE_NAME"), "this node's ID (default $BERTH_NODE_NAME, else the host name)")
	flag.StringVar(&opts.Root, "root", "", "the directory that holds the volumes (required)")
	flag.BoolVar(&opts.ControllerPublish, "controller-publish", false, "offer ControllerPublish/Unpublish")
	flag.BoolVar(&opts.NoStage, "no-stage", false, "withhold NodeStage/Unstage")
	flag.BoolVar(&opts.NoController, "no-controller", false, "serve no controller service")
	flag.Int64Var(&opts.MaxVolumes, "max-volumes", 0, "volumes per node (0: no limit)")
	flag.Parse()
	socket, ok := strings.CutPrefix(*endpoint, "unix://")
	if !ok || socket == "" {
		return fmt.Errorf("--endpoint %q: want unix://<absolute socket path>", *endpoint)
	}
	srv, err := csitest.Serve(socket, opts)
	if err != nil {
		return err
	}
	slog.Info("csi plugin serving", "name", opts.Name, "socket", socket, "root", opts.Root)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := srv.Wait(ctx); err != nil && ctx.Err() == nil {
		return err
	}
	return srv.Close()
}
