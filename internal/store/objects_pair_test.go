package store

import (
	"context"
	"errors"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// CreateWithUpdate writes both objects or neither: an existing object or a changed
// owner leaves everything as it was.
func TestCreateWithUpdate(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	s := testStore
	owner := configMap("pair", "owner", "v1")
	if err := s.Create(ctx, owner, Raw{}); err != nil {
		t.Fatal(err)
	}
	rv1 := owner.Metadata.ResourceVersion
	next := configMap("pair", "owner", "v2")
	next.Metadata.ResourceVersion, next.Metadata.CreationTimestamp = rv1, owner.Metadata.CreationTimestamp
	if err := s.CreateWithUpdate(ctx, configMap("pair", "run-1", "r"), next); err != nil {
		t.Fatal(err)
	}
	if next.Metadata.ResourceVersion == rv1 {
		t.Error("the owner's resourceVersion was not moved")
	}
	got, err := s.Get(ctx, v4.KindConfigMap, "pair", "owner")
	if err != nil || content(t, got) != "v2" || got.GetMeta().ResourceVersion != next.Metadata.ResourceVersion {
		t.Fatalf("owner after the pair: %+v, %v", got, err)
	}
	if _, err := s.Get(ctx, v4.KindConfigMap, "pair", "run-1"); err != nil {
		t.Fatalf("created object: %v", err)
	}

	// The same object again (another leader made the run): exists, owner untouched.
	again := configMap("pair", "owner", "v3")
	again.Metadata.ResourceVersion = next.Metadata.ResourceVersion
	if err := s.CreateWithUpdate(ctx, configMap("pair", "run-1", "r"), again); !errors.Is(err, ErrAlreadyExists) {
		t.Fatalf("existing object: got %v, want ErrAlreadyExists", err)
	}
	// A stale owner: a conflict, and the new object is not written.
	stale := configMap("pair", "owner", "v4")
	stale.Metadata.ResourceVersion = rv1
	if err := s.CreateWithUpdate(ctx, configMap("pair", "run-2", "r"), stale); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale owner: got %v, want ErrConflict", err)
	}
	if _, err := s.Get(ctx, v4.KindConfigMap, "pair", "run-2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("run-2 written with a stale owner: %v", err)
	}
	if got, _ := s.Get(ctx, v4.KindConfigMap, "pair", "owner"); content(t, got) != "v2" {
		t.Fatalf("owner changed by refused writes: %q", content(t, got))
	}
	// No version: refused, as the precondition is the point.
	if err := s.CreateWithUpdate(ctx, configMap("pair", "run-3", "r"), configMap("pair", "owner", "x")); !errors.Is(err, ErrInvalid) {
		t.Fatalf("owner without a version: got %v, want ErrInvalid", err)
	}
}
