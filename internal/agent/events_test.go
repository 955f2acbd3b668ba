package agent

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver/fake"
	"github.com/berthhq/berth/internal/executor"
	"github.com/berthhq/berth/internal/store/storetest"
)

// Each source of events queues an AgentEvent of the right object, with a message the
// server takes: a long one is cut to the bound, never inside a rune.
func TestQueueEvent(t *testing.T) {
	long := strings.Repeat("m", v4.MaxAgentEventMessage+10)
	runes := strings.Repeat("é", v4.MaxAgentEventMessage) // 2 bytes each: the cut falls inside one
	tests := []struct {
		name string
		send func(a *Agent)
		want v4.AgentEvent
	}{
		{"task group", func(a *Agent) {
			a.taskGroupEvent("ns-a", "0.web.ns-a.c.1", v4.EventWarning, "HookFailed", "preStop: exit 1")
		},
			v4.AgentEvent{Type: v4.EventWarning, Reason: "HookFailed", Message: "preStop: exit 1",
				Kind: v4.KindTaskGroup, Namespace: "ns-a", Name: "0.web.ns-a.c.1"}},
		{"service", func(a *Agent) { a.warnService("ns-a", "db", "LoadBalancerPortUnavailable", "port 5432") },
			v4.AgentEvent{Type: v4.EventWarning, Reason: "LoadBalancerPortUnavailable", Message: "port 5432",
				Kind: v4.KindService, Namespace: "ns-a", Name: "db"}},
		{"node", func(a *Agent) { a.warnNode("LoadBalancerConfigRefused", "haproxy -c") },
			v4.AgentEvent{Type: v4.EventWarning, Reason: "LoadBalancerConfigRefused", Message: "haproxy -c"}},
		{"long message", func(a *Agent) { a.taskGroupEvent("ns-a", "0.web.ns-a.c.1", v4.EventNormal, "HookRan", long) },
			v4.AgentEvent{Type: v4.EventNormal, Reason: "HookRan", Message: long[:v4.MaxAgentEventMessage-3] + "...",
				Kind: v4.KindTaskGroup, Namespace: "ns-a", Name: "0.web.ns-a.c.1"}},
		{"long message of runes", func(a *Agent) { a.taskGroupEvent("ns-a", "0.web.ns-a.c.1", v4.EventNormal, "HookRan", runes) },
			v4.AgentEvent{Type: v4.EventNormal, Reason: "HookRan", Message: runes[:v4.MaxAgentEventMessage-4] + "...",
				Kind: v4.KindTaskGroup, Namespace: "ns-a", Name: "0.web.ns-a.c.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &Agent{log: storetest.QuietLogger(), nodeEvents: make(chan v4.AgentEvent, 1)}
			tt.send(a)
			select {
			case got := <-a.nodeEvents:
				if got != tt.want {
					t.Errorf("queued %+v\nwant %+v", got, tt.want)
				}
				if !utf8.ValidString(got.Message) || got.Validate() != nil {
					t.Errorf("the server would refuse it: %v", got.Validate())
				}
			default:
				t.Fatal("nothing queued")
			}
		})
	}
}

// A full queue drops the event rather than stalling the pod's goroutine.
func TestQueueEventFullDrops(t *testing.T) {
	a := &Agent{log: storetest.QuietLogger(), nodeEvents: make(chan v4.AgentEvent, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 3 {
			a.taskGroupEvent("ns-a", "0.web.ns-a.c.1", v4.EventWarning, "HookFailed", strings.Repeat("x", i+1))
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("queueing blocked on a full queue")
	}
	if got := <-a.nodeEvents; got.Message != "x" || len(a.nodeEvents) != 0 {
		t.Errorf("kept %+v and %d more, want the first only", got, len(a.nodeEvents))
	}
}

// The executor's events of a pod reach the server from an agent without a load-balancer
// group, recorded on the pod's owner.
func TestTaskGroupEventsReachTheOwner(t *testing.T) {
	c := newCluster(t)
	var event func(namespace, name, typ, reason, message string)
	ra := startAgent(t, c, t.TempDir(), fake.New("process"), func(cfg *Config) {
		tune := cfg.TuneExecutor
		cfg.TuneExecutor = func(ec *executor.Config) { tune(ec); event = ec.Event }
	})
	<-ra.a.Ready() // Run tuned the executor's config before
	if event == nil {
		t.Fatal("the executor has no Event")
	}
	const name = "0.web.ns-a.c.1"
	runProcessTGs(t, name)
	event(testNS, name, v4.EventWarning, "HookFailed", "preStop hook of task web: exit status 1")
	waitFor(t, "the event on the process", func() bool {
		storetest.FlushEvents(t, testStore)
		evs, err := testStore.ListEvents(context.Background(), v4.EventFilter{Namespace: testNS, Kind: v4.KindProcess, Name: "web"})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Reason == "HookFailed" && e.TaskGroup == name && e.Node == testNode && strings.Contains(e.Message, name) {
				return true
			}
		}
		return false
	})
}
