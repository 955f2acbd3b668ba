// Package csi is berth's client of one Container Storage Interface plugin: the
// identity, controller and node services of the CSI spec (v1), spoken over the plugin's
// unix socket. The server uses the controller calls to create, delete and attach volumes;
// the agent uses the node calls to stage and publish them on its node (docs/volumes.md).
//
// Every call runs under its own timeout and with bounded message sizes, so a plugin that
// hangs or answers with a huge message cannot stall or exhaust its caller. Errors name the
// plugin and the call and keep the plugin's gRPC status: Code(err) gives codes.NotFound
// for a volume the plugin does not know. Secrets travel in the requests only; nothing here
// logs a request.
package csi

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Defaults for Options.
const (
	// DefaultTimeout bounds one call. Create and stage may format a disk, so it is
	// generous; Probe and the info calls are quick and use probeTimeout.
	DefaultTimeout = 2 * time.Minute
	// DefaultMaxMessageBytes bounds a message either way. CSI messages are small (a
	// volume's ID, context and topology); 4 MiB is gRPC's own default for receiving.
	DefaultMaxMessageBytes = 4 << 20
	probeTimeout           = 10 * time.Second
	// maxSocketPath is the room a unix socket path has in sockaddr_un on Linux.
	maxSocketPath = 107
)

// Options tune a Client; zero values take the defaults.
type Options struct {
	Timeout         time.Duration
	MaxMessageBytes int
}

// Client talks to one plugin. It is safe for concurrent use.
type Client struct {
	plugin     string
	timeout    time.Duration
	conn       *grpc.ClientConn
	identity   csipb.IdentityClient
	controller csipb.ControllerClient
	node       csipb.NodeClient
}

// New returns a client of the plugin named plugin (used in errors) listening on the unix
// socket at socket. gRPC connects lazily: the first call (usually Probe) finds out whether
// anything listens there.
func New(plugin, socket string, opts Options) (*Client, error) {
	if !filepath.IsAbs(socket) {
		return nil, fmt.Errorf("csi plugin %s: socket %q must be an absolute path", plugin, socket)
	}
	if len(socket) > maxSocketPath {
		return nil, fmt.Errorf("csi plugin %s: socket path is %d bytes, at most %d fit in a unix socket address", plugin, len(socket), maxSocketPath)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	conn, err := grpc.NewClient("unix://"+socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(opts.MaxMessageBytes), grpc.MaxCallSendMsgSize(opts.MaxMessageBytes)))
	if err != nil {
		return nil, fmt.Errorf("csi plugin %s: connect to %s: %w", plugin, socket, err)
	}
	return &Client{
		plugin: plugin, timeout: opts.Timeout, conn: conn,
		identity:   csipb.NewIdentityClient(conn),
		controller: csipb.NewControllerClient(conn),
		node:       csipb.NewNodeClient(conn),
	}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Plugin returns the name the client was made with.
func (c *Client) Plugin() string { return c.plugin }

// Error is a failed call: the plugin, the call and the plugin's error, whose gRPC status
// is kept (status.FromError and Code see through the wrapping).
type Error struct {
	Plugin string
	Call   string
	Err    error
}

func (e *Error) Error() string { return fmt.Sprintf("csi plugin %s: %s: %v", e.Plugin, e.Call, e.Err) }

// Unwrap returns the plugin's error.
func (e *Error) Unwrap() error { return e.Err }

// GRPCStatus returns the status the plugin answered with, so that status.FromError and
// status.Code work on the wrapped error.
func (e *Error) GRPCStatus() *status.Status {
	if s, ok := status.FromError(e.Err); ok {
		return s
	}
	return status.New(codes.Unknown, e.Err.Error())
}

// Code returns the gRPC code of a call's error: codes.OK for nil, codes.NotFound when the
// plugin does not know a volume, codes.Unknown for an error that carries none.
func Code(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.GRPCStatus().Code()
	}
	return status.Code(err)
}

// call runs fn under the client's timeout (or d when shorter) and wraps its error.
func call[T any](ctx context.Context, c *Client, name string, d time.Duration, fn func(context.Context) (T, error)) (T, error) {
	if d <= 0 || d > c.timeout {
		d = c.timeout
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	out, err := fn(ctx)
	if err != nil {
		var zero T
		return zero, &Error{Plugin: c.plugin, Call: name, Err: err}
	}
	return out, nil
}

// misuse is an error the client raises itself, before asking the plugin.
func (c *Client) misuse(name string, code codes.Code, format string, args ...any) error {
	return &Error{Plugin: c.plugin, Call: name, Err: status.Errorf(code, format, args...)}
}
