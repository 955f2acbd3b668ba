package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
)

// Replacing instances (docs/lifecycle.md, "Replacing instances"): an update of an
// application or process only changes what new instances run. An OpReplace on the
// workload replaces the first N of its instances (every one without N) that do not run
// its stored pod template, one after another, each by a move to any node, its own
// included (v4.MoveAnywhereOrHere): the replacement starts first and the old run stops
// once it is ready. BCS's update relaunched the instances this way.
//
// The operation is the whole state, in etcd: Target names the task group whose move it
// asked for last. A step annotates the next one (the move machinery does the rest) when
// that move is done; the application controller takes a step at each reconcile, so a
// restarted or new leader carries on. A failed move ends the operation with a Warning.
// The template compared is the one stored now: a new update while a replace is under
// way makes it go on against the newest (instances already replaced are replaced again).

// ReplaceError is a replace refused because of what was asked.
type ReplaceError struct {
	NotFound bool
	Field    string
	Message  string
}

func (e *ReplaceError) Error() string { return e.Message }

// RequestReplace begins an OpReplace on workload kind ns/name (superseding one under way)
// and asks for its first move. It returns the workload and the operation, or a nil
// operation when no instance needs replacing. A replace refused because of the request
// is a *ReplaceError; another operation in progress a *store.LockedError.
func RequestReplace(ctx context.Context, st *store.Store, kind v4.Kind, ns, name string, req v4.ReplaceRequest) (v4.Object, *v4.Operation, error) {
	if !slices.Contains(appKinds, kind) {
		return nil, nil, &ReplaceError{Message: fmt.Sprintf("%s have no instances to replace: only applications and processes do (a deployment rolls its own)", kind.Plural())}
	}
	if n := req.Instances; n != nil && (*n < 0 || *n > v4.MaxInstances) {
		return nil, nil, &ReplaceError{Field: "instances", Message: fmt.Sprintf("instances must be between 0 and %d, got %d", v4.MaxInstances, *n)}
	}
	obj, err := st.Get(ctx, kind, ns, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, &ReplaceError{NotFound: true, Message: fmt.Sprintf("%s %s/%s not found", kind, ns, name)}
	}
	if err != nil {
		return nil, nil, err
	}
	if owner := obj.GetMeta().Annotations[v4.ControlledByAnnotation]; owner != "" {
		return nil, nil, fmt.Errorf("%s %s/%s is controlled by %s; change that instead: %w", kind, ns, name, owner, store.ErrLocked)
	}
	if v4.Stateful(obj.GetMeta()) && !req.Force {
		return nil, nil, &ReplaceError{Field: "force", Message: fmt.Sprintf("%s %s/%s is stateful (annotation %s: \"true\"): its instances are replaced only when forced", kind, ns, name, v4.StatefulAnnotation)}
	}
	all, _, err := store.Typed[*v4.TaskGroup](st, v4.KindTaskGroup).List(ctx, ns)
	if err != nil {
		return nil, nil, fmt.Errorf("list the task groups of %s %s/%s: %w", kind, ns, name, err)
	}
	byIndex := map[int][]*v4.TaskGroup{}
	for _, tg := range all {
		if tg.Spec.Owner.Kind == kind && tg.Spec.Owner.Name == name {
			byIndex[tg.Spec.Index] = append(byIndex[tg.Spec.Index], tg)
		}
	}
	for _, tgs := range byIndex {
		slices.SortFunc(tgs, byRun)
	}
	// A replace under way whose move is in flight hands that move on to the new one.
	cur, err := st.Operation(ctx, kind, ns, name)
	if err != nil {
		return nil, nil, err
	}
	var moving *v4.TaskGroup
	if cur != nil && cur.Type == v4.OpReplace {
		if tg := findTaskGroup(byIndex, cur.Target); tg != nil && alive(tg) && tg.Metadata.Annotations[v4.MoveToAnnotation] != "" {
			moving = tg
		}
	}
	next := moving
	if next == nil {
		next = nextToReplace(workload(obj), byIndex, req.Instances)
	}
	if next == nil {
		return obj, nil, nil
	}
	op := v4.Operation{Type: v4.OpReplace, Kind: kind, Name: ns + "/" + name, Instances: req.Instances, Started: time.Now().UTC()}
	op.Target, op.Message = next.Metadata.Name, replaceMessage(op, next)
	// A new replace (BCS's next update) supersedes one under way; a move, a scale or a
	// rollout must end first.
	if err := st.BeginOperation(ctx, ns, name, op, v4.OpReplace); err != nil {
		return nil, nil, err
	}
	if moving != nil {
		return obj, &op, nil
	}
	if err := askMove(ctx, st, next); err != nil {
		_ = st.EndOperation(context.WithoutCancel(ctx), kind, ns, name, v4.OpReplace)
		return nil, nil, err
	}
	return obj, &op, nil
}

// replaceMessage says what the operation does and which instance it moves now.
func replaceMessage(op v4.Operation, now *v4.TaskGroup) string {
	which := "every instance"
	if op.Instances != nil {
		which = fmt.Sprintf("the first %d instances", *op.Instances)
	}
	return fmt.Sprintf("replace %s not running the stored template, one at a time: instance %d (%s) now", which, now.Spec.Index, now.Metadata.Name)
}

// askMove annotates tg to be moved anywhere, its own node included.
func askMove(ctx context.Context, st *store.Store, tg *v4.TaskGroup) error {
	err := AnnotateTaskGroup(ctx, st, tg.Metadata.Namespace, tg.Metadata.Name, func(a map[string]string) {
		a[v4.MoveToAnnotation] = v4.MoveAnywhereOrHere
		delete(a, v4.MoveFailedAnnotation)
	})
	if err != nil {
		return fmt.Errorf("ask task group %s/%s to move: %w", tg.Metadata.Namespace, tg.Metadata.Name, err)
	}
	return nil
}

// nextToReplace is the running instance of lowest index, below n (any when nil), that
// does not run w's pod template: not stopped on purpose, not being moved.
func nextToReplace(w *v4.Workload, byIndex map[int][]*v4.TaskGroup, n *int) *v4.TaskGroup {
	want, err := json.Marshal(w.Spec.Template)
	if err != nil {
		return nil
	}
	for _, idx := range slices.Sorted(maps.Keys(byIndex)) {
		if idx >= w.Spec.Instance || n != nil && idx >= *n {
			break
		}
		if v4.IsStopped(w.Spec.StoppedInstances, idx) || len(byIndex[idx]) == 0 {
			continue
		}
		rs := splitRuns(byIndex[idx])
		if rs.pending != nil || !alive(rs.cur) || rs.cur.Metadata.Annotations[v4.MoveToAnnotation] != "" {
			continue
		}
		if got, err := json.Marshal(rs.cur.Spec.Template); err == nil && !bytes.Equal(got, want) {
			return rs.cur
		}
	}
	return nil
}

// advanceReplace takes the next step of the workload's OpReplace, if op (the operation
// in progress, nil for none) is one: it waits while the move it asked for is under way,
// ends the operation with a Warning when that move failed, asks for the next move when it
// is done, and ends the operation when no instance is left to replace.
func (c *AppController) advanceReplace(ctx context.Context, key scheduler.AppKey, op *v4.Operation, w *v4.Workload, byIndex map[int][]*v4.TaskGroup) error {
	if op == nil || op.Type != v4.OpReplace {
		return nil
	}
	if cur := findTaskGroup(byIndex, op.Target); cur != nil && alive(cur) {
		a := cur.Metadata.Annotations
		switch {
		case a[v4.MoveToAnnotation] != "":
			return nil // under way
		case a[v4.MoveFailedAnnotation] != "":
			c.event(key, v4.EventWarning, "ReplaceFailed", fmt.Sprintf("instance %d (%s) was not replaced: %s; the instances after it keep what they run",
				cur.Spec.Index, cur.Metadata.Name, a[v4.MoveFailedAnnotation]))
			c.endOperation(ctx, key, v4.OpReplace)
			return nil
		}
		// The operation names it but the annotation was not written (a crash in between).
		if splitRuns(byIndex[cur.Spec.Index]).cur == cur {
			return askMove(ctx, c.store, cur)
		}
	}
	next := nextToReplace(w, byIndex, op.Instances)
	if next == nil {
		c.event(key, v4.EventNormal, "Replaced", "every instance asked for runs the stored template")
		c.endOperation(ctx, key, v4.OpReplace)
		return nil
	}
	op.Target, op.Message = next.Metadata.Name, replaceMessage(*op, next)
	if ok, err := c.store.UpdateOperation(ctx, key.Namespace, key.Name, *op); err != nil || !ok {
		return err // superseded or ended meanwhile: the next reconcile reads it
	}
	return askMove(ctx, c.store, next)
}

// findTaskGroup returns the task group named name among byIndex, or nil.
func findTaskGroup(byIndex map[int][]*v4.TaskGroup, name string) *v4.TaskGroup {
	if name == "" {
		return nil
	}
	for _, tgs := range byIndex {
		for _, tg := range tgs {
			if tg.Metadata.Name == name {
				return tg
			}
		}
	}
	return nil
}
