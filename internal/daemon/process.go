package daemon

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/berthhq/berth/internal/tracing"
)

// Process is what every berth process sets up around its work: the signals that stop it
// and its traces.
type Process struct {
	// Service names the process in its traces (berth-server, berth-agent, berth-dev).
	Service, Version string
	// TraceEndpoint is the OTLP endpoint traces go to ("": none; docs/tracing.md).
	TraceEndpoint string
	Logger        *slog.Logger
}

// Run runs work until it returns; SIGINT or SIGTERM cancels the context work is given.
// A process that runs a server and an agent has one tracer provider for both.
func (p Process) Run(ctx context.Context, work func(context.Context) error) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	stopTracing, err := tracing.Setup(ctx, tracing.Config{Endpoint: p.TraceEndpoint, Service: p.Service, Version: p.Version, Logger: p.Logger})
	if err != nil {
		return err
	}
	defer stopTracing()
	return work(ctx)
}
