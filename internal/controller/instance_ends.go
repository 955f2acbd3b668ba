package controller

import (
	"context"
	"errors"
	"maps"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/instvol"
	"github.com/berthhq/berth/internal/store"
)

// topOwner is the workload a task group's instance belongs to: the deployment of a
// deployment's application (its revisions run the same instances one after the other),
// else the task group's owner. It is the agent's key of the instance's volumes
// (instvol.KeyOf), so that both always name the same instance.
func topOwner(tg *v4.TaskGroup) (v4.Kind, string) {
	k := instvol.KeyOf(tg)
	return k.Kind, k.Owner
}

// instanceEnds reports whether the instance of tg ends for good: its workload is gone or
// wants fewer instances than its index. It reads the shared caches, and says no when it
// cannot tell (a cache not yet synced, a workload that still exists there): the agent
// then keeps the instance's volumes for its grace, never removes them too early.
func (c *base) instanceEnds(tg *v4.TaskGroup) bool {
	if c.caches == nil {
		return false
	}
	kind, name := topOwner(tg)
	ch := c.cache(kind)
	select {
	case <-ch.Synced():
	default:
		return false
	}
	obj, ok := ch.Get(tg.Metadata.Namespace, name)
	if !ok {
		return true
	}
	switch o := obj.(type) {
	case *v4.Deployment:
		return tg.Spec.Index >= o.Spec.Instance
	case *v4.Application:
		return tg.Spec.Index >= o.Spec.Instance
	case *v4.Process:
		return tg.Spec.Index >= o.Spec.Instance
	}
	return false
}

// markInstanceEnds writes InstanceEndsAnnotation on an ended task group about to be
// deleted, so that the agent's last view of it says so; a failed write (a conflict with
// the agent's report) only leaves the agent its grace.
func (c *base) markInstanceEnds(ctx context.Context, tg *v4.TaskGroup) {
	if tg.Metadata.Annotations[v4.InstanceEndsAnnotation] == "true" || !c.instanceEnds(tg) {
		return
	}
	cp := *tg // tg may be the shared cache's object: write a copy
	cp.Metadata.Annotations = maps.Clone(cp.Metadata.Annotations)
	if cp.Metadata.Annotations == nil {
		cp.Metadata.Annotations = map[string]string{}
	}
	cp.Metadata.Annotations[v4.InstanceEndsAnnotation] = "true"
	if err := c.store.Update(ctx, &cp, store.Raw{}); err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			c.log.Debug("mark the instance's end", "taskgroup", tg.Metadata.Name, "err", err)
		}
		return
	}
	c.wrote(&cp)
}
