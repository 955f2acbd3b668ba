package agent

import "go.opentelemetry.io/otel"

// tracer makes the agent's spans (a no-op one unless tracing is set up: internal/tracing).
var tracer = otel.Tracer("github.com/berthhq/berth/internal/agent")
