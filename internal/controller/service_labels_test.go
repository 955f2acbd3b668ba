package controller

import (
	"slices"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

func TestLabelIndex(t *testing.T) {
	x := newLabelIndex()
	tg := func(ns, name string, labels map[string]string) *v4.TaskGroup {
		return &v4.TaskGroup{Metadata: v4.ObjectMeta{Namespace: ns, Name: name}, Spec: v4.TaskGroupSpec{Labels: labels}}
	}
	x.apply(store.Event{Type: store.Added, Object: tg("a", "0.web", map[string]string{"app": "web", "tier": "front"})})
	x.apply(store.Event{Type: store.Added, Object: tg("a", "1.web", map[string]string{"app": "web"})})
	x.apply(store.Event{Type: store.Added, Object: tg("b", "0.web", map[string]string{"app": "web", "tier": "front"})})
	names := func(ns string, sel map[string]string) []string {
		var out []string
		for _, t := range x.matching(ns, sel) {
			out = append(out, t.Metadata.Name)
		}
		slices.Sort(out)
		return out
	}
	tests := []struct {
		ns   string
		sel  map[string]string
		want []string
	}{
		{"a", map[string]string{"app": "web"}, []string{"0.web", "1.web"}},
		{"a", map[string]string{"app": "web", "tier": "front"}, []string{"0.web"}},
		{"a", map[string]string{"app": "api"}, nil},
		{"b", map[string]string{"app": "web"}, []string{"0.web"}},
	}
	for _, tt := range tests {
		if got := names(tt.ns, tt.sel); !slices.Equal(got, tt.want) {
			t.Errorf("%s %v: %v, want %v", tt.ns, tt.sel, got, tt.want)
		}
	}
	x.apply(store.Event{Type: store.Deleted, Object: tg("a", "0.web", map[string]string{"app": "web", "tier": "front"})})
	if got := names("a", map[string]string{"app": "web"}); !slices.Equal(got, []string{"1.web"}) {
		t.Errorf("after a deletion: %v", got)
	}
	x.reset()
	if got := names("b", map[string]string{"app": "web"}); got != nil {
		t.Errorf("after a reset: %v", got)
	}
}
