package tracing

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	v4 "github.com/berthhq/berth/api/v4"
)

var now = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// TestStampAndStartFrom: a stamped change is continued while fresh (a child of the same
// trace), and later starts a trace of its own linked to it.
func TestStampAndStartFrom(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)).Tracer("test")
	ctx, change := tracer.Start(context.Background(), "change")
	meta := &v4.ObjectMeta{Name: "web", Annotations: map[string]string{v4.TraceAnnotation: "given by a user"}}
	Stamp(ctx, meta, now)
	change.End()
	sc, at, ok := Recorded(meta)
	if !ok || sc.TraceID() != change.SpanContext().TraceID() || sc.SpanID() != change.SpanContext().SpanID() || !at.Equal(now) {
		t.Fatalf("recorded %v %v %v from %q", sc, at, ok, meta.Annotations[v4.TraceAnnotation])
	}

	cases := []struct {
		name      string
		after     time.Duration
		sameTrace bool
	}{
		{"fresh", FreshFor, true},
		{"stale", FreshFor + time.Second, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, span := StartFrom(context.Background(), tracer, meta, now.Add(c.after), "act")
			span.End()
			got := exp.GetSpans()[len(exp.GetSpans())-1]
			if same := got.SpanContext.TraceID() == change.SpanContext().TraceID(); same != c.sameTrace {
				t.Fatalf("same trace %v, want %v", same, c.sameTrace)
			}
			if c.sameTrace && got.Parent.SpanID() != change.SpanContext().SpanID() {
				t.Errorf("parent %v, want the change's span", got.Parent.SpanID())
			}
			if !c.sameTrace && (len(got.Links) != 1 || got.Links[0].SpanContext.SpanID() != change.SpanContext().SpanID()) {
				t.Errorf("links %+v, want the change's span", got.Links)
			}
		})
	}
}

// TestStampWithoutTracing removes a value it did not write, and writes none.
func TestStampWithoutTracing(t *testing.T) {
	ctx, span := noop.NewTracerProvider().Tracer("off").Start(context.Background(), "x")
	defer span.End()
	meta := &v4.ObjectMeta{Annotations: map[string]string{v4.TraceAnnotation: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 2026-11-27T12:00:00Z", "keep": "me"}}
	Stamp(ctx, meta, now)
	if _, found := meta.Annotations[v4.TraceAnnotation]; found || meta.Annotations["keep"] != "me" {
		t.Errorf("annotations %v", meta.Annotations)
	}
}

// TestRecordedIgnoresGarbage: a value berth cannot read is no trace.
func TestRecordedIgnoresGarbage(t *testing.T) {
	for _, v := range []string{"", "x", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 yesterday",
		"00-00000000000000000000000000000000-b7ad6b7169203331-01 2026-11-27T12:00:00Z",
		"zz-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 2026-11-27T12:00:00Z"} {
		if _, _, ok := Recorded(&v4.ObjectMeta{Annotations: map[string]string{v4.TraceAnnotation: v}}); ok {
			t.Errorf("%q read as a trace", v)
		}
	}
	if _, _, ok := Recorded(&v4.ObjectMeta{}); ok {
		t.Error("no annotation read as a trace")
	}
}

// TestEnabled: off unless an endpoint is configured, and OTEL_SDK_DISABLED wins.
func TestEnabled(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_SDK_DISABLED", "")
	if Enabled(Config{}) {
		t.Error("enabled without an endpoint")
	}
	if !Enabled(Config{Endpoint: "127.0.0.1:4317"}) {
		t.Error("not enabled with an endpoint")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4317")
	if !Enabled(Config{}) {
		t.Error("not enabled by the environment")
	}
	t.Setenv("OTEL_SDK_DISABLED", "true")
	if Enabled(Config{Endpoint: "127.0.0.1:4317"}) {
		t.Error("enabled though disabled")
	}
	stop, err := Setup(context.Background(), Config{Endpoint: "127.0.0.1:4317"})
	if err != nil {
		t.Fatal(err)
	}
	stop()
}

// FuzzRecorded: any annotation value is read as a valid trace or as none, never a panic.
func FuzzRecorded(f *testing.F) {
	f.Add("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 2026-11-27T12:00:00Z")
	f.Add("")
	f.Add("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	f.Fuzz(func(t *testing.T, v string) {
		sc, _, ok := Recorded(&v4.ObjectMeta{Annotations: map[string]string{v4.TraceAnnotation: v}})
		if ok != sc.IsValid() {
			t.Fatalf("%q: ok %v but valid %v", v, ok, sc.IsValid())
		}
	})
}
