package server

import (
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracer makes the server's spans; it is the global provider's, a no-op one unless
// tracing is set up (internal/tracing).
var tracer = otel.Tracer("github.com/berthhq/berth/internal/server")

// traced reports whether a request gets a span: the users' API calls. Not the agents'
// protocol (heartbeats and status reports of every node, all the time), health and
// metrics scrapes, or watch streams, which last as long as the client stays.
func traced(r *http.Request) bool {
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/v1/agent/"), p == "/healthz", p == "/readyz", strings.HasPrefix(p, "/metrics"),
		strings.HasPrefix(p, "/ui"):
		return false
	}
	return r.URL.Query().Get("watch") == ""
}

// traceRequest serves r within a server span, continuing the caller's trace when the
// request carries a W3C traceparent header. The span is named by the route once the mux
// has matched it; r gets the pattern too, as when the mux serves r itself.
func traceRequest(w *statusWriter, r *http.Request, next http.Handler) {
	ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)))
	defer span.End()
	inner := r.WithContext(ctx)
	next.ServeHTTP(w, inner)
	r.Pattern = inner.Pattern
	if r.Pattern != "" {
		span.SetName(r.Pattern)
		span.SetAttributes(attribute.String("http.route", r.Pattern))
	}
	span.SetAttributes(attribute.Int("http.response.status_code", w.code))
	if w.code >= 500 {
		span.SetStatus(codes.Error, strconv.Itoa(w.code))
	}
}
