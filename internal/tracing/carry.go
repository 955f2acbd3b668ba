package tracing

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	v4 "github.com/berthhq/berth/api/v4"
)

// FreshFor is how long after a change its trace is continued. A component that acts on
// an object later than this (an instance restarted an hour after the apply, an agent
// back from a long partition) starts a trace of its own, linked to the change's: a trace
// stays the story of one change, not of everything that ever followed it.
const FreshFor = 10 * time.Minute

// Stamp records the trace of ctx's span on meta (v4.TraceAnnotation), replacing any
// value already there; without a recording span (tracing off) it only removes one, so
// that a value a user sent, or one copied from another object, is never taken for
// berth's own.
func Stamp(ctx context.Context, meta *v4.ObjectMeta, now time.Time) {
	delete(meta.Annotations, v4.TraceAnnotation)
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() || !span.SpanContext().IsValid() {
		return
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	parent := carrier.Get("traceparent")
	if parent == "" {
		return
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[v4.TraceAnnotation] = parent + " " + now.UTC().Format(time.RFC3339)
}

// Recorded reads the trace meta carries: the span context of the change that wrote it
// and when. ok is false when there is none or it does not parse (the value is not
// trusted: anything unreadable is ignored).
func Recorded(meta *v4.ObjectMeta) (sc trace.SpanContext, at time.Time, ok bool) {
	value, found := meta.Annotations[v4.TraceAnnotation]
	if !found {
		return trace.SpanContext{}, time.Time{}, false
	}
	parent, stamp, _ := strings.Cut(value, " ")
	at, err := time.Parse(time.RFC3339, stamp)
	if err != nil {
		return trace.SpanContext{}, time.Time{}, false
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": parent})
	sc = trace.SpanContextFromContext(ctx)
	return sc, at, sc.IsValid()
}

// StartFrom starts a span for acting on an object: a child of the change recorded on
// meta while it is fresh, else a new trace linked to it (or a plain span of ctx when
// meta records none).
func StartFrom(ctx context.Context, tracer trace.Tracer, meta *v4.ObjectMeta, now time.Time, name string,
	opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if sc, at, ok := Recorded(meta); ok {
		if now.Sub(at) <= FreshFor {
			ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
		} else {
			opts = append(opts, trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: sc}))
		}
	}
	return tracer.Start(ctx, name, opts...)
}
