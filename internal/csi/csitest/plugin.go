// Package csitest is a small but real CSI plugin for berth's tests: volumes are
// directories under a root directory, staging and publishing are bind mounts, and it
// serves the identity, controller and node services of the CSI spec (v1) on a unix
// socket, in process (Serve) or as a program (test/e2e/csiplugin). It stands in for a
// storage plugin where none can be installed; its state lives on disk, so a restarted
// plugin knows its volumes, and it records the calls it was made, so tests can check the
// order berth makes them in (docs/volumes.md, "Tests").
package csitest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
)

// Options describe the plugin.
type Options struct {
	// Name is the plugin's name (GetPluginInfo); default "csitest.berth.io".
	Name string
	// NodeID is this node's ID (NodeGetInfo); default the host name.
	NodeID string
	// Root holds the volumes (Root/volumes/<id>) and their records.
	Root string
	// TopologyKey is the segment key of the node's topology ("topology.csitest/node"
	// by default), whose value is NodeID.
	TopologyKey string
	// ControllerPublish offers PUBLISH_UNPUBLISH_VOLUME; NoStage withholds
	// STAGE_UNSTAGE_VOLUME; NoController serves no controller service.
	ControllerPublish, NoStage, NoController bool
	// MaxVolumes is NodeGetInfo's max_volumes_per_node (0: no limit).
	MaxVolumes int64
	// MaxCapacity bounds a created volume (default 1 TiB): larger is OUT_OF_RANGE.
	MaxCapacity int64
}

// DefaultName is the plugin's name when Options.Name is empty.
const DefaultName = "csitest.berth.io"

// Plugin implements the three services.
type Plugin struct {
	csipb.UnimplementedIdentityServer
	csipb.UnimplementedControllerServer
	csipb.UnimplementedNodeServer

	opts  Options
	mu    sync.Mutex // serialises the calls that change state, as the spec allows a plugin to
	calls []string
}

// New checks opts and prepares the root directory.
func New(opts Options) (*Plugin, error) {
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	if opts.NodeID == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("csitest: node ID: %w", err)
		}
		opts.NodeID = h
	}
	if opts.TopologyKey == "" {
		opts.TopologyKey = "topology.csitest/node"
	}
	if opts.MaxCapacity <= 0 {
		opts.MaxCapacity = 1 << 40
	}
	if !filepath.IsAbs(opts.Root) {
		return nil, fmt.Errorf("csitest: root %q must be an absolute path", opts.Root)
	}
	if err := os.MkdirAll(filepath.Join(opts.Root, "volumes"), 0o700); err != nil {
		return nil, fmt.Errorf("csitest: %w", err)
	}
	return &Plugin{opts: opts}, nil
}

// Calls returns the names of the calls made so far, in order (Probe and the info calls
// excluded: a CO makes them at will).
func (p *Plugin) Calls() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls...)
}

func (p *Plugin) record(call string) {
	p.calls = append(p.calls, call)
}

// Server is a plugin serving on a unix socket.
type Server struct {
	*Plugin
	grpc *grpc.Server
	done chan error
}

// Serve starts the plugin on the unix socket at socket (an existing socket file there is
// replaced). Close stops it.
func Serve(socket string, opts Options) (*Server, error) {
	p, err := New(opts)
	if err != nil {
		return nil, err
	}
	if err := os.Remove(socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("csitest: %w", err)
	}
	l, err := net.Listen("unix", socket)
	if err != nil {
		return nil, fmt.Errorf("csitest: listen: %w", err)
	}
	g := grpc.NewServer()
	csipb.RegisterIdentityServer(g, p)
	if !opts.NoController {
		csipb.RegisterControllerServer(g, p)
	}
	csipb.RegisterNodeServer(g, p)
	s := &Server{Plugin: p, grpc: g, done: make(chan error, 1)}
	go func() { s.done <- g.Serve(l) }()
	return s, nil
}

// Close stops serving; calls in flight finish first.
func (s *Server) Close() error {
	s.grpc.GracefulStop()
	return <-s.done
}

// Wait blocks until the server stops or ctx ends.
func (s *Server) Wait(ctx context.Context) error {
	select {
	case err := <-s.done:
		s.done <- err
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
