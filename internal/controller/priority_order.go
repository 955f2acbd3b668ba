package controller

import (
	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
)

// priorityOf is the resolved priority of a job or workflow in the view's cache (0 when
// it is not cached), which orders the keys due at once in its controller's queue
// (docs/policy.md, "Placement order").
func (v *cacheView) priorityOf(key scheduler.AppKey) int32 {
	o, ok := v.cache.Get(key.Namespace, key.Name)
	if !ok {
		return 0
	}
	switch o := o.(type) {
	case *v4.Job:
		return o.Spec.PriorityValue()
	case *v4.Workflow:
		return o.Spec.PriorityValue()
	}
	return 0
}
