package store

import (
	"context"
	"errors"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// An apply marked RefuseControlled fails as a whole, writing nothing, when one of the
// stored objects it would replace is a controller's; new objects and objects nobody
// controls go through, and an apply not marked (a controller's own) changes its objects.
func TestApplyRefusesControlledObjects(t *testing.T) {
	resetStore(t)
	bg := context.Background()
	owned := configMap("controlled", "owned", "1")
	owned.Metadata.Annotations = map[string]string{v4.ControlledByAnnotation: "deployment/web"}
	if _, err := testStore.Apply(bg, docs(owned, configMap("controlled", "free", "1"))); err != nil {
		t.Fatal(err)
	}
	user := RefuseControlled(bg)
	ownedAgain := configMap("controlled", "owned", "4")
	ownedAgain.Metadata.Annotations = owned.Metadata.Annotations
	for _, c := range []struct {
		name string
		ctx  context.Context
		objs []v4.Object
		fail bool
	}{
		{"a user's apply of a controlled object", user, []v4.Object{configMap("controlled", "free", "2"), configMap("controlled", "owned", "2")}, true},
		{"a user's apply of new and free objects", user, []v4.Object{configMap("controlled", "new", "1"), configMap("controlled", "free", "3")}, false},
		{"the controller's own apply", bg, []v4.Object{ownedAgain}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, err := testStore.Get(bg, v4.KindConfigMap, "controlled", "free")
			if err != nil {
				t.Fatal(err)
			}
			_, err = testStore.Apply(c.ctx, docs(c.objs...))
			if !c.fail {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "controlled by deployment/web") {
				t.Fatalf("got %v, want ErrLocked naming the controller", err)
			}
			after, err := testStore.Get(bg, v4.KindConfigMap, "controlled", "free")
			if err != nil {
				t.Fatal(err)
			}
			if after.GetMeta().ResourceVersion != before.GetMeta().ResourceVersion {
				t.Fatal("a refused apply changed another of its objects")
			}
		})
	}
}

// GetLocal reads what Get reads once the member applied it, and says a missing object is
// missing.
func TestGetLocal(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	if err := testStore.Create(ctx, configMap("local", "a", "1"), Raw{}); err != nil {
		t.Fatal(err)
	}
	got, err := testStore.GetLocal(ctx, v4.KindConfigMap, "local", "a")
	if err != nil || got.GetMeta().Name != "a" {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := testStore.GetLocal(ctx, v4.KindConfigMap, "local", "b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a missing object: %v, want ErrNotFound", err)
	}
}
