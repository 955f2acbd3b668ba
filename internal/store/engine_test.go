package store

import (
	"context"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestEngineState(t *testing.T) {
	ctx := context.Background()
	if e, on := testStore.InMaintenance(ctx); on || e.Reason != "" {
		t.Fatalf("nothing stored: got %+v, want maintenance off", e)
	}
	on, err := testStore.SetEngine(ctx, v4.Engine{Maintenance: true, Reason: "etcd upgrade"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testStore.SetEngine(context.Background(), v4.Engine{}) })
	if on.Since.IsZero() {
		t.Fatal("Since not set when maintenance turned on")
	}
	if e, in := testStore.InMaintenance(ctx); !in || e.Reason != "etcd upgrade" {
		t.Fatalf("after SetEngine: %+v", e)
	}
	again, err := testStore.SetEngine(ctx, v4.Engine{Maintenance: true, Reason: "still upgrading"})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Since.Equal(on.Since) {
		t.Errorf("a new reason kept on: Since moved from %v to %v", on.Since, again.Since)
	}
	// A fresh store (another server) reads etcd, not this one's cache.
	other := &Store{client: testStore.client, log: testStore.log}
	if e, in := other.InMaintenance(ctx); !in || e.Reason != "still upgrading" {
		t.Fatalf("another server reads %+v", e)
	}
	if _, err := testStore.SetEngine(ctx, v4.Engine{}); err != nil {
		t.Fatal(err)
	}
	if _, in := testStore.InMaintenance(ctx); in {
		t.Fatal("maintenance still on after turning it off")
	}
}
