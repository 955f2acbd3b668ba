package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// The cluster-wide documents of admission webhooks: create, replace at a revision,
// list, delete, and the bound on how many a cluster holds.
func TestAdmissionWebhookDocs(t *testing.T) {
	ctx := context.Background()
	for _, d := range []string{"a", "b"} {
		testStore.DeleteAdmissionWebhook(ctx, d) // a rerun starts clean
	}
	rev, created, err := testStore.PutAdmissionWebhook(ctx, "a", []byte(`{"v":1}`), -1)
	if err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	if _, _, err := testStore.PutAdmissionWebhook(ctx, "a", []byte(`{"v":1}`), -1); !errors.Is(err, ErrAlreadyExists) {
		t.Fatalf("second create: %v", err)
	}
	if _, _, err := testStore.PutAdmissionWebhook(ctx, "a", []byte(`{"v":2}`), rev+100); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale replace: %v", err)
	}
	if _, created, err := testStore.PutAdmissionWebhook(ctx, "a", []byte(`{"v":2}`), rev); err != nil || created {
		t.Fatalf("replace: %v %v", created, err)
	}
	if _, _, err := testStore.PutAdmissionWebhook(ctx, "b", []byte(`{}`), 0); err != nil {
		t.Fatal(err)
	}
	docs, err := testStore.AdmissionWebhooks(ctx)
	if err != nil || len(docs) != 2 || string(docs[0].Value) != `{"v":2}` {
		t.Fatalf("%v %+v", err, docs)
	}
	for _, bad := range []string{"", "a/b", "../x"} {
		if _, _, err := testStore.PutAdmissionWebhook(ctx, bad, nil, 0); !errors.Is(err, ErrInvalid) {
			t.Errorf("name %q: %v", bad, err)
		}
	}
	for _, d := range []string{"a", "b"} {
		if _, err := testStore.DeleteAdmissionWebhook(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := testStore.DeleteAdmissionWebhook(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	// The bound: a full range refuses one more.
	for i := range webhookDocs.max {
		if _, _, err := testStore.PutAdmissionWebhook(ctx, fmt.Sprint("n", i), []byte(`{}`), 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := testStore.PutAdmissionWebhook(ctx, "one-more", []byte(`{}`), 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("past the bound: %v", err)
	}
	for i := range webhookDocs.max {
		testStore.DeleteAdmissionWebhook(ctx, fmt.Sprint("n", i))
	}
}
