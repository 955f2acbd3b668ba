// Package trace_test follows one change through berth's components in one process: an
// apply on a real server (embedded etcd, controllers, scheduler) and the start of its task
// on a real agent, all exporting to OpenTelemetry's in-memory exporter.
package trace_test

import (
	"context"
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/agent"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/daemon"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/fake"
	"github.com/berthhq/berth/internal/store/storetest"
	"github.com/berthhq/berth/internal/tracing"
)

const app = `apiVersion: v4
kind: process
metadata:
  name: web
  namespace: traced
spec:
  instance: 1
  template:
    spec:
      processes:
        - procName: web
          startCmd: ./web
`

// TestApplyToTaskStartIsOneTrace: the span of the task's start on the agent descends,
// through the agent's and the executor's start, the controller's placement and the store's
// write, from the API request that applied the application: one trace.
func TestApplyToTaskStartIsOneTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tracing.Install(tp)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	cl := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cl.Apply(ctx, []byte(app))
	if err != nil || len(res) != 1 || res[0].Action != v4.ActionCreated {
		t.Fatalf("apply: %v %+v", err, res)
	}
	waitFor(t, "the task group running", func() bool {
		list, err := cl.List(ctx, v4.KindTaskGroup, "traced")
		if err != nil || len(list.Items) != 1 {
			return false
		}
		return list.Items[0].(*v4.TaskGroup).Status.Phase == v4.StatusRunning
	})

	want := []string{"driver.Start", "executor.Launch", "agent.StartTaskGroup", "schedule", "store.Apply", "POST /v1/apply"}
	var chain []string
	deadline := time.Now().Add(10 * time.Second)
	for chain = spanChain(exp.GetSpans(), "driver.Start"); !slices.Equal(chain, want); chain = spanChain(exp.GetSpans(), "driver.Start") {
		if time.Now().After(deadline) {
			t.Fatalf("span chain from the task's start:\n  %s\nwant\n  %s", strings.Join(chain, " < "), strings.Join(want, " < "))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("one trace: %s", strings.Join(chain, " < "))

	// An apply that changes nothing writes nothing: the stored trace stays the first one's.
	obj, err := cl.Get(ctx, v4.KindProcess, "traced", "web")
	if err != nil {
		t.Fatal(err)
	}
	first := obj.GetMeta().Annotations[v4.TraceAnnotation]
	if first == "" {
		t.Fatal("the applied object records no trace")
	}
	if res, err = cl.Apply(ctx, []byte(app)); err != nil || res[0].Action != v4.ActionUnchanged {
		t.Fatalf("apply again: %v %+v", err, res)
	}
	if obj, err = cl.Get(ctx, v4.KindProcess, "traced", "web"); err != nil || obj.GetMeta().Annotations[v4.TraceAnnotation] != first {
		t.Errorf("trace after an unchanged apply: %v %q, want %q", err, obj.GetMeta().Annotations[v4.TraceAnnotation], first)
	}
}

// spanChain is the names of the first span named leaf and of its ancestors, leaf first;
// it stops at a parent of another trace or one not exported.
func spanChain(spans tracetest.SpanStubs, leaf string) []string {
	byID := map[string]tracetest.SpanStub{}
	var cur *tracetest.SpanStub
	for i, s := range spans {
		byID[s.SpanContext.SpanID().String()] = s
		if cur == nil && s.Name == leaf {
			cur = &spans[i]
		}
	}
	var chain []string
	for cur != nil {
		chain = append(chain, cur.Name)
		parent, ok := byID[cur.Parent.SpanID().String()]
		if !ok || parent.SpanContext.TraceID() != cur.SpanContext.TraceID() {
			break
		}
		cur = &parent
	}
	return chain
}

// startCluster runs a server with its controllers and an agent (fake process driver) in
// this process, and returns a management client.
func startCluster(t *testing.T) *client.Client {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		cfg := daemon.ServerConfig{DataDir: filepath.Join(dir, "server"), OnReady: func(addr string) { ready <- addr }}
		cfg.API.Listen, cfg.API.Logger = "127.0.0.1:0", storetest.QuietLogger()
		done <- daemon.RunServer(ctx, cfg)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("server: %v", err)
	case <-time.After(time.Minute):
		cancel()
		t.Fatal("the server did not start in a minute")
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, "server", name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	a, err := agent.New(agent.Config{ServerURLs: []string{"https://" + addr}, Token: read(daemon.JoinTokenFile),
		NodeName: "traced-node", IP: "127.0.0.1", DataDir: filepath.Join(dir, "agent"), Listen: "127.0.0.1:0",
		Drivers: map[string]driver.Driver{"process": fake.New("process")}, Logger: storetest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	agentDone := make(chan error, 1)
	go func() { agentDone <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-agentDone
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(read(daemon.CAFile)))
	cl, err := client.New("https://"+addr, client.WithHTTPClient(client.HTTPClient(pool, nil)), client.WithBearerToken(read(daemon.AdminTokenFile)))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
