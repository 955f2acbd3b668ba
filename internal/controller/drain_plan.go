package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
)

// drainPlan is what is left to do on a draining node.
type drainPlan struct {
	candidates []*v4.TaskGroup // instances to move, in order
	moving     string          // the task group whose move is under way, if any
	waiting    int             // instances waiting to retry a move that failed
	skipped    []drainSkip     // instances that stay (stateful, not forced)
}

type drainSkip struct{ key, name, why string }

func (p drainPlan) skippedNames() []string {
	out := make([]string, 0, len(p.skipped))
	for _, s := range p.skipped {
		out = append(out, s.name)
	}
	return out
}

// plan sorts the task groups on node. Daemonset and dependency task groups are left:
// a daemonset's belong to the node, a dependency's are collected when its dependents
// have left. Task groups being stopped or already ended go away by themselves.
func (c *DrainController) plan(ctx context.Context, node string, force bool) (drainPlan, error) {
	tgs, err := c.tgs.onNode(ctx, node)
	if err != nil {
		return drainPlan{}, fmt.Errorf("drain %s: %w", node, err)
	}
	var p drainPlan
	owners := map[scheduler.AppKey]v4.Object{}
	now := time.Now()
	for _, tg := range tgs {
		if tg.Spec.Node != node || !slices.Contains(appKinds, tg.Spec.Owner.Kind) || !alive(tg) {
			continue
		}
		key := tg.Metadata.Namespace + "/" + tg.Metadata.Name
		if tg.Metadata.Annotations[v4.MoveToAnnotation] != "" {
			p.moving = tg.Metadata.Name
			continue
		}
		owner, err := c.owner(ctx, owners, tg)
		if err != nil {
			return drainPlan{}, err
		}
		if owner == nil {
			continue // its owner is deleted: the application controller removes it
		}
		if v4.Stateful(owner.GetMeta()) && !force {
			p.skipped = append(p.skipped, drainSkip{key: key, name: tg.Metadata.Name,
				why: fmt.Sprintf("%s stays on node %s: %s %s/%s is stateful (drain with --force to move it)", tg.Metadata.Name, node, tg.Spec.Owner.Kind, tg.Metadata.Namespace, tg.Spec.Owner.Name)})
			continue
		}
		if why := tg.Metadata.Annotations[v4.MoveFailedAnnotation]; why != "" && c.backoffUntil(node, key, now).IsZero() && !c.retried(node, key, why) {
			// A move of it failed since the last try: wait before the next one, so a
			// replacement that keeps crashing is not recreated in a tight loop.
			c.nodeEventOnce(node, "blocked/"+key, v4.EventWarning, "DrainBlocked",
				fmt.Sprintf("cannot move %s off node %s yet (retrying every %s): %s", tg.Metadata.Name, node, drainRetry, why))
			c.setBackoff(node, key, now.Add(drainRetry))
		}
		if !c.backoffUntil(node, key, now).IsZero() {
			p.waiting++
			continue
		}
		p.candidates = append(p.candidates, tg)
	}
	return p, nil
}

// retried reports whether the drain already waited once for the failure why of key, and
// remembers that it did: the annotation stays until the next request replaces it.
func (c *DrainController) retried(node, key, why string) bool {
	return c.swap(drainID(node, "failure/"+key), why) == why
}

// owner returns the task group's application or process (nil when deleted), cached in
// owners for one plan.
func (c *DrainController) owner(ctx context.Context, owners map[scheduler.AppKey]v4.Object, tg *v4.TaskGroup) (v4.Object, error) {
	k := scheduler.AppKey{Kind: tg.Spec.Owner.Kind, Namespace: tg.Metadata.Namespace, Name: tg.Spec.Owner.Name}
	if o, ok := owners[k]; ok {
		return o, nil
	}
	o, err := c.store.Get(ctx, k.Kind, k.Namespace, k.Name)
	if errors.Is(err, store.ErrNotFound) {
		o, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	owners[k] = o
	return o, nil
}
