package store

import (
	"context"
	"fmt"

	v4 "github.com/berthhq/berth/api/v4"
)

type refuseControlledKey struct{}

// RefuseControlled marks ctx's Apply as one that may not change an object a controller
// owns (v4.ControlledByAnnotation: a deployment's applications and processes): such a
// document fails the whole apply with ErrLocked. The check is made on the very version
// the apply's transaction compares, so it holds against a controller that takes an
// object over meanwhile, and it costs no read of its own: in a burst each read waits for
// etcd to apply what was committed before it.
func RefuseControlled(ctx context.Context) context.Context {
	return context.WithValue(ctx, refuseControlledKey{}, true)
}

// refuseControlled fails when ctx refuses controlled objects and one of the stored
// objects an apply replaces is one.
func refuseControlled(ctx context.Context, current []applyCurrent) error {
	if on, _ := ctx.Value(refuseControlledKey{}).(bool); !on {
		return nil
	}
	for _, cur := range current {
		if cur.obj == nil {
			continue
		}
		m := cur.obj.GetMeta()
		if owner := m.Annotations[v4.ControlledByAnnotation]; owner != "" {
			return fmt.Errorf("%s %s/%s is controlled by %s; change that instead: %w",
				cur.obj.GetKind(), m.Namespace, m.Name, owner, ErrLocked)
		}
	}
	return nil
}
