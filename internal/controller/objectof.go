package controller

import (
	"context"
	"errors"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
)

// objectOf returns the object of key as a *T: a shallow copy of the cached one, whose
// top-level fields (its status) a pass may set, or the stored one when the cache does
// not hold it yet (after a write the cache has not caught up with); nil when it is gone.
func objectOf[T any, P interface {
	*T
	v4.Object
}](ctx context.Context, st *store.Store, v *cacheView, key scheduler.AppKey) (P, error) {
	if err := v.caughtUp(ctx); err != nil {
		return nil, err
	}
	if o, ok := v.cache.Get(key.Namespace, key.Name); ok {
		if cached, ok := o.(P); ok {
			cp := new(T)
			*cp = *cached
			return cp, nil
		}
	}
	o, err := st.Get(ctx, key.Kind, key.Namespace, key.Name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	p, _ := o.(P)
	return p, nil
}
