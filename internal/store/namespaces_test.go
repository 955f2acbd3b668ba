package store

import (
	"slices"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// The namespaces are those holding objects users wrote, or bounded by limits: one
// emptied by a delete is gone, one given a quota before anything was written is there
// until its limits are removed.
func TestNamespaces(t *testing.T) {
	bg, user := resetForQuota(t)
	s := testStore
	for _, ns := range []string{"ns-b", "ns-a", "ns-c"} {
		if err := s.Create(user, configMap(ns, "c", "x"), Raw{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Delete(bg, v4.KindConfigMap, "ns-c", "c", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetNamespaceLimits(bg, "ns-quota", NamespaceLimits{Objects: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetNamespaceLimits(bg, "ns-a", NamespaceLimits{Objects: 10}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Namespaces(bg)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ns-a", "ns-b", "ns-quota"}; !slices.Equal(got, want) {
		t.Errorf("namespaces %q, want %q", got, want)
	}
	if _, err := s.SetNamespaceLimits(bg, "ns-quota", NamespaceLimits{}); err != nil {
		t.Fatal(err)
	}
	if got, err = s.Namespaces(bg); err != nil || !slices.Equal(got, []string{"ns-a", "ns-b"}) {
		t.Errorf("namespaces %q, %v after the quota was removed, want ns-a and ns-b", got, err)
	}
}
