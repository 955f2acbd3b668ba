package store

import "go.opentelemetry.io/otel"

// tracer makes the store's spans (a no-op one unless tracing is set up: internal/tracing).
var tracer = otel.Tracer("github.com/berthhq/berth/internal/store")
