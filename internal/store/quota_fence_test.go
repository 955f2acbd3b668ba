package store

import (
	"context"
	"errors"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// fenceOfNS reads ns's fence as an admission does, and returns a QuotaFence holding it.
func fenceOfNS(t *testing.T, s *Store, ns string) *QuotaFence {
	t.Helper()
	_, rev, err := s.NamespaceObjectsFenced(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	f := &QuotaFence{}
	f.See(ns, rev)
	return f
}

// A write carrying a fence commits while nobody else moved it, and moves it along (the
// request's next write compares against its own); a write whose fence another write
// moved meanwhile fails with ErrQuotaFence, a conflict, and stores nothing, whatever the
// kind, the route (create, update, apply, delete) or whether the ledger also moved.
func TestQuotaFence(t *testing.T) {
	bg, user := resetForQuota(t)
	s := testStore
	const ns = "fence-a"
	mine, theirs := fenceOfNS(t, s, ns), fenceOfNS(t, s, ns)
	if err := s.Create(WithQuotaFence(user, mine), configMap(ns, "m1", "x"), Raw{}); err != nil {
		t.Fatal(err)
	}
	// The request's own second write compares against the fence its first one left.
	if err := s.Create(WithQuotaFence(user, mine), configMap(ns, "m2", "x"), Raw{}); err != nil {
		t.Fatalf("a request's second fenced write: %v", err)
	}

	tests := []struct {
		name  string
		write func(ctx context.Context) error
	}{
		{"create", func(ctx context.Context) error { return s.Create(ctx, configMap(ns, "t1", "x"), Raw{}) }},
		{"update of the same size", func(ctx context.Context) error { return s.Update(ctx, configMap(ns, "m1", "y"), Raw{}) }},
		{"apply", func(ctx context.Context) error { _, err := s.Apply(ctx, docs(configMap(ns, "t2", "x"))); return err }},
		{"delete", func(ctx context.Context) error { _, err := s.Delete(ctx, v4.KindConfigMap, ns, "m2", ""); return err }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, err := s.Revision(bg)
			if err != nil {
				t.Fatal(err)
			}
			stale := &QuotaFence{} // as counted before mine's writes: its first attempt fails in etcd
			stale.See(ns, theirs.revs[ns])
			err = tc.write(WithQuotaFence(user, stale))
			if !errors.Is(err, ErrQuotaFence) || !errors.Is(err, ErrConflict) {
				t.Fatalf("a write on a moved fence: %v, want ErrQuotaFence", err)
			}
			if after, _ := s.Revision(bg); after != before {
				t.Errorf("the refused write moved the revision from %d to %d", before, after)
			}
		})
	}
	// Counted again, the other request writes.
	theirs = fenceOfNS(t, s, ns)
	if err := s.Create(WithQuotaFence(user, theirs), configMap(ns, "t1", "x"), Raw{}); err != nil {
		t.Fatal(err)
	}
	// Writes without a fence (berth's own, a namespace without a resource quota) neither
	// compare nor move it.
	before := fenceOfNS(t, s, ns)
	if err := s.Create(bg, configMap(ns, "b1", "x"), Raw{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(WithQuotaFence(user, before), configMap(ns, "t3", "x"), Raw{}); err != nil {
		t.Fatalf("an unfenced write moved the fence: %v", err)
	}
	if !(&QuotaFence{}).Empty() || WithQuotaFence(bg, nil) != bg {
		t.Error("an empty fence must leave the context as it is")
	}
}
