package tracing

import (
	"context"
	"net"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// collector is an OTLP/gRPC trace collector that keeps the names of the spans it gets.
type collector struct {
	collectortrace.UnimplementedTraceServiceServer
	mu       sync.Mutex
	names    []string
	services []string
}

func (c *collector) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, a := range rs.Resource.Attributes {
			if a.Key == "service.name" {
				c.services = append(c.services, a.Value.GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.names = append(c.names, s.Name)
			}
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// TestSetupExportsOverOTLP: with an endpoint, the spans of the global tracer reach a
// collector over OTLP/gRPC by the time the stop function returns.
func TestSetupExportsOverOTLP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, c)
	go func() { _ = srv.Serve(l) }()
	defer srv.Stop()

	t.Setenv("OTEL_SDK_DISABLED", "")
	stop, err := Setup(context.Background(), Config{Endpoint: "http://" + l.Addr().String(), Service: "berth-test"})
	if err != nil {
		t.Fatal(err)
	}
	_, span := otel.Tracer("test").Start(context.Background(), "exported")
	span.End()
	stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.names) != 1 || c.names[0] != "exported" || len(c.services) != 1 || c.services[0] != "berth-test" {
		t.Errorf("collector got spans %v of services %v", c.names, c.services)
	}
}
