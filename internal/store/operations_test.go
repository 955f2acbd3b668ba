package store

import (
	"context"
	"errors"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestOperationsAreSerialisedPerObject(t *testing.T) {
	ctx := context.Background()
	ns := "ops"
	scale := v4.Operation{Type: v4.OpScale, Kind: v4.KindProcess, Name: "web", Message: "scale from 3 to 5"}
	if err := testStore.BeginOperation(ctx, ns, "web", scale); err != nil {
		t.Fatalf("begin on a free object: %v", err)
	}
	move := v4.Operation{Type: v4.OpMove, Kind: v4.KindProcess, Name: "web"}
	err := testStore.BeginOperation(ctx, ns, "web", move)
	var locked *LockedError
	if !errors.Is(err, ErrLocked) || !errors.As(err, &locked) || locked.Current.Type != v4.OpScale {
		t.Fatalf("second operation: got %v, want a LockedError naming the scale", err)
	}
	if err := testStore.BeginOperation(ctx, ns, "other", move); err != nil {
		t.Fatalf("another object is not locked: %v", err)
	}
	again := scale
	again.Message = "scale from 5 to 2"
	if err := testStore.BeginOperation(ctx, ns, "web", again, v4.OpScale); err != nil {
		t.Fatalf("a scale supersedes a scale: %v", err)
	}
	if err := testStore.EndOperation(ctx, v4.KindProcess, ns, "web", v4.OpMove); err != nil {
		t.Fatal(err)
	}
	if op, _ := testStore.Operation(ctx, v4.KindProcess, ns, "web"); op == nil || op.Message != "scale from 5 to 2" {
		t.Fatalf("ending another type must leave the operation: got %+v", op)
	}
	if err := testStore.EndOperation(ctx, v4.KindProcess, ns, "web", v4.OpScale); err != nil {
		t.Fatal(err)
	}
	if op, err := testStore.Operation(ctx, v4.KindProcess, ns, "web"); op != nil || err != nil {
		t.Fatalf("after the end: got %+v, %v", op, err)
	}
	if err := testStore.BeginOperation(ctx, ns, "web", move); err != nil {
		t.Fatalf("begin after the end: %v", err)
	}
	if err := testStore.BeginOperation(ctx, ns, "a/b", move); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad name: got %v", err)
	}
}

// UpdateOperation rewrites the operation it read, never one begun since.
func TestUpdateOperationOnlyTheSameOne(t *testing.T) {
	ctx := context.Background()
	started := time.Now().UTC().Truncate(time.Millisecond)
	op := v4.Operation{Type: v4.OpReplace, Kind: v4.KindProcess, Name: "ops/rep", Started: started, Target: "a"}
	if ok, err := testStore.UpdateOperation(ctx, "ops", "rep", op); ok || err != nil {
		t.Fatalf("update of none: %v %v", ok, err)
	}
	if err := testStore.BeginOperation(ctx, "ops", "rep", op); err != nil {
		t.Fatal(err)
	}
	op.Target = "b"
	if ok, err := testStore.UpdateOperation(ctx, "ops", "rep", op); !ok || err != nil {
		t.Fatalf("update of the same: %v %v", ok, err)
	}
	newer := op
	newer.Started, newer.Target = started.Add(time.Second), "c"
	if err := testStore.BeginOperation(ctx, "ops", "rep", newer, v4.OpReplace); err != nil {
		t.Fatal(err)
	}
	op.Target = "d"
	if ok, err := testStore.UpdateOperation(ctx, "ops", "rep", op); ok || err != nil {
		t.Fatalf("update of a superseded one: %v %v", ok, err)
	}
	if cur, _ := testStore.Operation(ctx, v4.KindProcess, "ops", "rep"); cur == nil || cur.Target != "c" {
		t.Fatalf("operation %+v, want the newer one", cur)
	}
	_ = testStore.EndOperation(ctx, v4.KindProcess, "ops", "rep", v4.OpReplace)
}
