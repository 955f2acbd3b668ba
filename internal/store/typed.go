package store

import (
	"context"
	"fmt"

	v4 "github.com/berthhq/berth/api/v4"
)

// TypedStore is a view of a Store for one kind with its concrete Go type, so callers need
// no type assertions: store.Typed[*v4.Process](s, v4.KindProcess).Get(ctx, ns, name).
type TypedStore[T v4.Object] struct {
	s    *Store
	kind v4.Kind
}

// TypedEvent is a watch Event with a concrete object type.
type TypedEvent[T v4.Object] struct {
	Type     EventType
	Object   T
	Revision int64
}

// Typed returns the view of s for kind, whose objects must be of type T.
func Typed[T v4.Object](s *Store, kind v4.Kind) TypedStore[T] {
	return TypedStore[T]{s: s, kind: kind}
}

func (t TypedStore[T]) cast(obj v4.Object) (T, error) {
	typed, ok := obj.(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("%w: stored %s is a %T, not a %T", ErrInvalid, t.kind, obj, zero)
	}
	return typed, nil
}

// Create stores a new object (see Store.Create).
func (t TypedStore[T]) Create(ctx context.Context, obj T, raw Raw) error {
	if obj.GetKind() != t.kind {
		return fmt.Errorf("create: %w: a %s given to the %s store", ErrInvalid, obj.GetKind(), t.kind)
	}
	return t.s.Create(ctx, obj, raw)
}

// Get returns one object (see Store.Get).
func (t TypedStore[T]) Get(ctx context.Context, ns, name string) (T, error) {
	obj, err := t.s.Get(ctx, t.kind, ns, name)
	if err != nil {
		var zero T
		return zero, err
	}
	return t.cast(obj)
}

// List returns the objects of ns ("" for all) and the revision of the read (see Store.List).
func (t TypedStore[T]) List(ctx context.Context, ns string) ([]T, int64, error) {
	objs, rev, err := t.s.List(ctx, t.kind, ns)
	if err != nil {
		return nil, 0, err
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		typed, err := t.cast(o)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, typed)
	}
	return out, rev, nil
}

// Update replaces an object (see Store.Update).
func (t TypedStore[T]) Update(ctx context.Context, obj T, raw Raw) error {
	if obj.GetKind() != t.kind {
		return fmt.Errorf("update: %w: a %s given to the %s store", ErrInvalid, obj.GetKind(), t.kind)
	}
	return t.s.Update(ctx, obj, raw)
}

// Delete removes an object and returns its last state (see Store.Delete).
func (t TypedStore[T]) Delete(ctx context.Context, ns, name, resourceVersion string) (T, error) {
	obj, err := t.s.Delete(ctx, t.kind, ns, name, resourceVersion)
	if err != nil {
		var zero T
		return zero, err
	}
	return t.cast(obj)
}

// Watch streams changes with typed objects (see Store.Watch). The channel closes when ctx
// is done or the underlying watch ends.
func (t TypedStore[T]) Watch(ctx context.Context, ns string, fromRev int64) (<-chan TypedEvent[T], error) {
	in, err := t.s.Watch(ctx, t.kind, ns, fromRev)
	if err != nil {
		return nil, err
	}
	out := make(chan TypedEvent[T], watchBuffer)
	go func() {
		defer close(out)
		// Drain in to its end: it closes when ctx is done, so this goroutine ends with it.
		for ev := range in {
			obj, err := t.cast(ev.Object)
			if err != nil {
				t.s.log.Warn("typed watch: skipping object", "err", err)
				continue
			}
			select {
			case out <- TypedEvent[T]{Type: ev.Type, Object: obj, Revision: ev.Revision}:
			case <-ctx.Done():
				// Keep draining in so its producer can exit; it closes soon after ctx is done.
			}
		}
	}()
	return out, nil
}
