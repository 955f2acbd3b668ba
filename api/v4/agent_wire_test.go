package v4

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// An agent event is of its node, of a service or of a task group; each field at fault is
// named.
func TestAgentEventValidate(t *testing.T) {
	ok := func(f func(*AgentEvent)) AgentEvent {
		e := AgentEvent{Type: EventWarning, Reason: "HookFailed", Message: "preStop hook of task web: exit status 1"}
		f(&e)
		return e
	}
	tg := func(e *AgentEvent) {
		e.Kind, e.Namespace, e.Name = KindTaskGroup, "ns-a", "0.web.ns-a.c1.1700000000000000000"
	}
	tests := []struct {
		name  string
		event AgentEvent
		want  []string // fields at fault, none when valid
	}{
		{"node", ok(func(*AgentEvent) {}), nil},
		{"service", ok(func(e *AgentEvent) { e.Kind, e.Namespace, e.Name = KindService, "ns-a", "db" }), nil},
		{"task group", ok(tg), nil},
		{"task group of the default namespace", ok(func(e *AgentEvent) {
			tg(e)
			e.Namespace, e.Name = DefaultNamespace, "2.web.defaultGroup.BCS-K8S-001.1700000000000000000"
		}), nil},
		{"task group name with a space", ok(func(e *AgentEvent) { tg(e); e.Name = "0.web ns" }), []string{"name"}},
		{"task group name too long", ok(func(e *AgentEvent) { tg(e); e.Name = "0." + strings.Repeat("a", 260) }), []string{"name"}},
		{"task group without a name", ok(func(e *AgentEvent) { tg(e); e.Name = "" }), []string{"name"}},
		{"task group without a namespace", ok(func(e *AgentEvent) { tg(e); e.Namespace = "" }), []string{"namespace"}},
		{"service name with a dot", ok(func(e *AgentEvent) { e.Kind, e.Namespace, e.Name = KindService, "ns-a", "0.db" }), []string{"name"}},
		{"another kind", ok(func(e *AgentEvent) { e.Kind, e.Namespace, e.Name = KindProcess, "ns-a", "web" }), []string{"kind"}},
		{"name without a kind", ok(func(e *AgentEvent) { e.Namespace, e.Name = "ns-a", "db" }), []string{"kind"}},
		{"type", ok(func(e *AgentEvent) { e.Type = "Fatal" }), []string{"type"}},
		{"reason", ok(func(e *AgentEvent) { e.Reason = "hook failed" }), []string{"reason"}},
		{"empty message", ok(func(e *AgentEvent) { e.Message = "" }), []string{"message"}},
		{"long message", ok(func(e *AgentEvent) { e.Message = strings.Repeat("m", MaxAgentEventMessage+1) }), []string{"message"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.event.Validate()
			var got []string
			if fe, ok := errors.AsType[FieldErrors](err); ok {
				for _, e := range fe {
					got = append(got, e.Field)
				}
			} else if err != nil {
				t.Fatalf("%v is not field errors", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("fields at fault %v, want %v (%v)", got, tt.want, err)
			}
		})
	}
}
