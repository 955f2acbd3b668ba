package controller

import (
	"sync"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// labelIndex finds the task groups a selector matches without reading every task group
// of the namespace: task groups by namespace and label ("ns\x00k=v"), kept from the
// task group watch. A look at a service then costs the task groups of its selector's
// rarest label, not the namespace's (10,000 in one namespace made each look, and so
// each status change of an instance, cost 10,000 checks).
type labelIndex struct {
	mu    sync.RWMutex
	byKey map[string]map[string]*v4.TaskGroup // "ns\x00k=v" -> task group name -> it
	tgs   map[string]*v4.TaskGroup            // "ns/name" -> its last state
}

func newLabelIndex() *labelIndex {
	return &labelIndex{byKey: map[string]map[string]*v4.TaskGroup{}, tgs: map[string]*v4.TaskGroup{}}
}

func labelKey(ns, k, v string) string { return ns + "\x00" + k + "=" + v }

// reset forgets everything (a new watch lists every task group again).
func (x *labelIndex) reset() {
	x.mu.Lock()
	defer x.mu.Unlock()
	clear(x.byKey)
	clear(x.tgs)
}

// apply takes one event of the task group watch.
func (x *labelIndex) apply(ev store.Event) {
	tg, ok := ev.Object.(*v4.TaskGroup)
	if !ok {
		return
	}
	ns, name := tg.Metadata.Namespace, tg.Metadata.Name
	x.mu.Lock()
	defer x.mu.Unlock()
	if old := x.tgs[ns+"/"+name]; old != nil {
		for k, v := range old.Spec.Labels {
			set := x.byKey[labelKey(ns, k, v)]
			delete(set, name)
			if len(set) == 0 {
				delete(x.byKey, labelKey(ns, k, v))
			}
		}
		delete(x.tgs, ns+"/"+name)
	}
	if ev.Type == store.Deleted {
		return
	}
	x.tgs[ns+"/"+name] = tg
	for k, v := range tg.Spec.Labels {
		set := x.byKey[labelKey(ns, k, v)]
		if set == nil {
			set = map[string]*v4.TaskGroup{}
			x.byKey[labelKey(ns, k, v)] = set
		}
		set[name] = tg
	}
}

// matching returns the task groups of ns whose labels the selector matches.
func (x *labelIndex) matching(ns string, selector map[string]string) []*v4.TaskGroup {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var smallest map[string]*v4.TaskGroup
	for k, v := range selector {
		set := x.byKey[labelKey(ns, k, v)]
		if smallest == nil || len(set) < len(smallest) {
			smallest = set
		}
		if len(set) == 0 {
			return nil
		}
	}
	out := make([]*v4.TaskGroup, 0, len(smallest))
	for _, tg := range smallest {
		if v4.Selects(selector, tg.Spec.Labels) {
			out = append(out, tg)
		}
	}
	return out
}
