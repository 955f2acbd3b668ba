package store

import (
	"slices"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// The namespaces are those holding objects users wrote: one emptied by a delete is gone.
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
	got, err := s.Namespaces(bg)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ns-a", "ns-b"}; !slices.Equal(got, want) {
		t.Errorf("namespaces %q, want %q", got, want)
	}
}
