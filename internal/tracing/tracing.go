// Package tracing sets up berth's OpenTelemetry traces and carries a trace from one
// component to the next through the objects they share in the store.
//
// Tracing is off unless an OTLP endpoint is configured (--otlp-endpoint, or the standard
// OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT variables): until then
// the global provider is OpenTelemetry's no-op one and a span costs next to nothing. Every
// package takes its tracer from the global provider (otel.Tracer), so the one Setup call
// of a process, or a test's own provider, reaches them all (docs/tracing.md).
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Config is what a process's traces need.
type Config struct {
	// Endpoint is the OTLP/gRPC collector address (host:port, or a URL whose scheme
	// chooses TLS: http:// is plain text). Empty: the OTEL_EXPORTER_OTLP_* variables
	// decide, and without them tracing is off.
	Endpoint string
	// Service is the service.name of the process's spans (berth-server, berth-agent).
	Service string
	// Version is the service.version.
	Version string
	Logger  *slog.Logger
}

// Enabled reports whether cfg, with the environment, asks for traces to be exported.
func Enabled(cfg Config) bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	return cfg.Endpoint != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" ||
		os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// shutdownGrace bounds the last export when the process stops.
const shutdownGrace = 5 * time.Second

// Setup installs the global tracer provider and the W3C trace context propagator when
// tracing is enabled, and returns the function that flushes and stops it (a no-op when
// tracing is off). Spans are exported in batches over OTLP/gRPC; sampling follows the
// standard OTEL_TRACES_SAMPLER variables (default: every trace, and a remote parent's
// decision when there is one).
func Setup(ctx context.Context, cfg Config) (func(), error) {
	if !Enabled(cfg) {
		return func() {}, nil
	}
	var opts []otlptracegrpc.Option
	if cfg.Endpoint != "" {
		if strings.Contains(cfg.Endpoint, "://") {
			opts = append(opts, otlptracegrpc.WithEndpointURL(cfg.Endpoint))
		} else {
			opts = append(opts, otlptracegrpc.WithEndpoint(cfg.Endpoint))
		}
	}
	exp, err := otlptracegrpc.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	host, _ := os.Hostname()
	res := resource.NewSchemaless(
		attribute.String("service.name", cfg.Service),
		attribute.String("service.version", cfg.Version),
		attribute.String("host.name", host),
	)
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	Install(tp)
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("tracing", "err", err)
	}))
	log.Info("exporting traces over OTLP", "endpoint", endpointOf(cfg))
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
			log.Warn("tracing: the last spans were not exported", "err", err)
		}
	}, nil
}

// Install makes tp the global tracer provider, with the W3C trace context propagator
// (tests install a provider of their own this way).
func Install(tp *sdktrace.TracerProvider) {
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
}

func endpointOf(cfg Config) string {
	for _, e := range []string{cfg.Endpoint, os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")} {
		if e != "" {
			return e
		}
	}
	return ""
}
