package store

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/berthhq/berth/internal/customres"
	clientv3 "go.etcd.io/etcd/client/v3"
)

const testCRD = "widgets.example.com"

// crValue is a replacement of a custom resource that is val whatever was stored.
func crValue(val string) func([]byte) ([]byte, error) {
	return func([]byte) ([]byte, error) { return []byte(val), nil }
}

// listCRs collects what CustomResourcesEach walks.
func listCRs(ctx context.Context, crd, ns string) ([]StoredDoc, error) {
	var out []StoredDoc
	err := testStore.CustomResourcesEach(ctx, crd, ns, func(int64) error { return nil }, func(d StoredDoc) error {
		out = append(out, d)
		return nil
	})
	return out, err
}

func TestCustomResourcesLifecycle(t *testing.T) {
	bg, user := resetForQuota(t)
	s := testStore
	if _, err := s.CreateCustomResource(user, testCRD, "cr-a", "one", []byte(`{}`)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a resource of an undefined kind: %v, want ErrNotFound", err)
	}
	if _, err := s.CreateDefinition(bg, testCRD, []byte(`{"kind":"CustomResourceDefinition"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateDefinition(bg, testCRD, []byte(`{}`)); !errors.Is(err, ErrAlreadyExists) {
		t.Fatalf("second create: %v", err)
	}
	if _, err := s.CreateCustomResource(user, testCRD, "cr-a", "one", []byte(`{"spec":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateCustomResource(user, testCRD, "cr-a", "one", []byte(`{"spec":1}`)); !errors.Is(err, ErrAlreadyExists) {
		t.Fatalf("second resource create: %v", err)
	}
	if _, err := s.CreateCustomResource(user, testCRD, "cr-b", "two", []byte(`{"spec":2}`)); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, "cr-a", 1)
	if _, err := s.UpdateCustomResource(user, testCRD, "cr-a", "one", 0, crValue(`{"spec":"longer"}`)); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, "cr-a", 1)
	got, err := s.CustomResource(bg, testCRD, "cr-a", "one")
	if err != nil || string(got.Value) != `{"spec":"longer"}` {
		t.Fatalf("read: %q %v", got.Value, err)
	}
	if _, err := s.UpdateCustomResource(user, testCRD, "cr-a", "one", got.Rev-1, crValue(`{}`)); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale update: %v", err)
	}
	all, err := listCRs(bg, testCRD, "")
	if err != nil || len(all) != 2 || all[0].Namespace != "cr-a" || all[1].Name != "two" {
		t.Fatalf("list all: %+v %v", all, err)
	}
	if one, err := listCRs(bg, testCRD, "cr-b"); err != nil || len(one) != 1 {
		t.Fatalf("list cr-b: %+v %v", one, err)
	}
	if _, err := s.DeleteDefinition(bg, testCRD, 0); !errors.Is(err, ErrDefinitionInUse) {
		t.Fatalf("delete a definition in use: %v, want ErrDefinitionInUse", err)
	}
	for _, ns := range []string{"cr-a", "cr-b"} {
		list, _ := listCRs(bg, testCRD, ns)
		if _, err := s.DeleteCustomResource(user, testCRD, ns, list[0].Name, 0); err != nil {
			t.Fatal(err)
		}
	}
	wantUsage(t, "cr-a", 0)
	if _, err := s.DeleteDefinition(bg, testCRD, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Definition(bg, testCRD); !errors.Is(err, ErrNotFound) {
		t.Fatalf("read a deleted definition: %v", err)
	}
}

// A namespace's limit on objects counts its custom resources; the cluster holds a bounded
// number of definitions; names that would leave their key range are refused.
func TestCustomResourcesBounds(t *testing.T) {
	bg, user := resetForQuota(t)
	s := testStore
	if _, err := s.CreateDefinition(bg, testCRD, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetNamespaceLimits(bg, "cr-q", NamespaceLimits{Objects: 2}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := s.CreateCustomResource(user, testCRD, "cr-q", fmt.Sprintf("r%d", i), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateCustomResource(user, testCRD, "cr-q", "r2", []byte(`{}`)); !errors.Is(err, ErrQuotaExceeded) {
		t.Fatalf("past the namespace's limit: %v, want ErrQuotaExceeded", err)
	}
	for _, bad := range [][3]string{{"../x", "cr-q", "a"}, {testCRD, "cr-q", "a/b"}, {testCRD, "a/b", "c"}, {testCRD, "cr-q", "UP"}, {"nodot", "cr-q", "a"}} {
		if _, err := s.CreateCustomResource(user, bad[0], bad[1], bad[2], []byte(`{}`)); !errors.Is(err, ErrInvalid) {
			t.Errorf("create %q: %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := s.CreateDefinition(bg, "a/b.example.com", []byte(`{}`)); !errors.Is(err, ErrInvalid) {
		t.Errorf("a definition named with a '/': %v", err)
	}
	for i := 1; i < customres.MaxDefinitions; i++ {
		if _, err := s.CreateDefinition(bg, fmt.Sprintf("w%d.example.com", i), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateDefinition(bg, "one-too-many.example.com", []byte(`{}`)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("definition %d: %v, want ErrInvalid", customres.MaxDefinitions+1, err)
	}
	n, err := s.Client().Get(bg, crdPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || n.Count != customres.MaxDefinitions {
		t.Fatalf("definitions stored: %v %v", n.Count, err)
	}
}
