package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/scheduler/feed"
	"github.com/berthhq/berth/internal/store"
)

// MoveError is a move refused because of what was asked: Field names the part of the
// request at fault ("node", "force", or "" for the task group itself).
type MoveError struct {
	NotFound bool // the task group or the node does not exist
	Stateful bool // the workload is stateful and the move was not forced
	Field    string
	Message  string
}

func (e *MoveError) Error() string { return e.Message }

// Unwrap makes a refusal of a stateful workload match ErrStateful.
func (e *MoveError) Unwrap() error {
	if e.Stateful {
		return ErrStateful
	}
	return nil
}

// ErrStateful marks a refusal because the workload is stateful and force was not given.
var ErrStateful = errors.New("stateful workload")

// RequestMove asks for task group ns/name to be moved to req.Node (any other node when
// empty): it checks the request, begins an OpMove on the owner (a *store.LockedError
// when another operation is in progress) and annotates the task group; the application
// controller does the rest and ends the operation. why goes into the operation's
// message ("drain node-a", or "" for a user's move). f gives the scheduler's view for the
// feasibility check; errors that concern the request are *MoveError.
func RequestMove(ctx context.Context, st *store.Store, f *feed.Feed, ns, name string, req v4.MoveRequest, why string) (*v4.TaskGroup, *v4.Operation, error) {
	tg, owner, err := moveSubject(ctx, st, ns, name, req)
	if err != nil {
		return nil, nil, err
	}
	if req.OrHere && req.Node != "" {
		return nil, nil, &MoveError{Field: "orHere", Message: fmt.Sprintf("orHere goes without node: node %s is the only one a move to it may use", req.Node)}
	}
	target := req.Node
	dest := "node " + target
	switch {
	case target == "" && req.OrHere:
		target, dest = v4.MoveAnywhereOrHere, "another node, or the same one when no other can take it"
	case target == "":
		target, dest = v4.MoveAnywhere, "another node"
	}
	if err := checkTarget(ctx, st, f, owner, tg, target); err != nil {
		return nil, nil, err
	}
	op := &v4.Operation{Type: v4.OpMove, Kind: tg.Spec.Owner.Kind, Name: ns + "/" + tg.Spec.Owner.Name, Target: name,
		Message: fmt.Sprintf("move instance %d (%s) from %s to %s", tg.Spec.Index, name, tg.Spec.Node, dest)}
	if why != "" {
		op.Message = why + ": " + op.Message
	}
	if err := st.BeginOperation(ctx, ns, tg.Spec.Owner.Name, *op); err != nil {
		return nil, nil, err
	}
	err = AnnotateTaskGroup(ctx, st, ns, name, func(a map[string]string) {
		a[v4.MoveToAnnotation] = target
		delete(a, v4.MoveFailedAnnotation)
	})
	if err != nil {
		_ = st.EndOperation(context.WithoutCancel(ctx), op.Kind, ns, tg.Spec.Owner.Name, v4.OpMove)
		return nil, nil, fmt.Errorf("ask task group %s/%s to move: %w", ns, name, err)
	}
	if tg, err = store.Typed[*v4.TaskGroup](st, v4.KindTaskGroup).Get(ctx, ns, name); err != nil {
		return nil, nil, err
	}
	return tg, op, nil
}

// moveSubject reads the task group and its owner and checks that it may move.
func moveSubject(ctx context.Context, st *store.Store, ns, name string, req v4.MoveRequest) (*v4.TaskGroup, v4.Object, error) {
	tg, err := store.Typed[*v4.TaskGroup](st, v4.KindTaskGroup).Get(ctx, ns, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, &MoveError{NotFound: true, Message: fmt.Sprintf("task group %s/%s not found", ns, name)}
	}
	if err != nil {
		return nil, nil, err
	}
	own := tg.Spec.Owner
	if !slices.Contains(appKinds, own.Kind) {
		return nil, nil, &MoveError{Message: fmt.Sprintf("task group %s/%s belongs to %s %s: only instances of applications and processes move (a daemonset's belong to their node, a dependency's follow their dependents)", ns, name, own.Kind, own.Name)}
	}
	if !alive(tg) {
		return nil, nil, &MoveError{Message: fmt.Sprintf("task group %s/%s is %s: only a running instance moves", ns, name, stateOf(tg))}
	}
	owner, err := st.Get(ctx, own.Kind, ns, own.Name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, &MoveError{Message: fmt.Sprintf("task group %s/%s: its %s %s is deleted", ns, name, own.Kind, own.Name)}
	}
	if err != nil {
		return nil, nil, err
	}
	if v4.Stateful(owner.GetMeta()) && !req.Force {
		return nil, nil, &MoveError{Stateful: true, Field: "force", Message: fmt.Sprintf("%s %s/%s is stateful (annotation %s: \"true\"): its instances stay where they are unless the move is forced", own.Kind, ns, own.Name, v4.StatefulAnnotation)}
	}
	return tg, owner, nil
}

func stateOf(tg *v4.TaskGroup) string {
	if stopping(tg) {
		return "being stopped"
	}
	return tg.Status.Phase
}

// checkTarget refuses a target that does not exist, is the current node, or cannot take
// the instance now (with the scheduler's reason). node is a node name, v4.MoveAnywhere
// or v4.MoveAnywhereOrHere.
func checkTarget(ctx context.Context, st *store.Store, f *feed.Feed, owner v4.Object, tg *v4.TaskGroup, node string) error {
	if node != v4.MoveAnywhere && node != v4.MoveAnywhereOrHere {
		if _, err := st.Get(ctx, v4.KindNode, "", node); errors.Is(err, store.ErrNotFound) {
			return &MoveError{NotFound: true, Field: "node", Message: fmt.Sprintf("node %s not found", node)}
		} else if err != nil {
			return err
		}
		if node == tg.Spec.Node {
			return &MoveError{Field: "node", Message: fmt.Sprintf("task group %s is on node %s already", tg.Metadata.Name, node)}
		}
	}
	req, err := scheduler.RequestFor(owner, []int{tg.Spec.Index})
	if err != nil {
		return &MoveError{Message: err.Error()}
	}
	select {
	case <-f.Synced():
	case <-ctx.Done():
		return fmt.Errorf("check where task group %s can go: %w", tg.Metadata.Name, ctx.Err())
	}
	snap := f.Clone()
	res := placeMove(req, tg, node, func(req *scheduler.Request) scheduler.Result { return snap.Place(req, scheduler.Options{}) })
	if len(res.Placements) == 0 {
		return &MoveError{Field: "node", Message: MoveUnplaceable(tg, node, res.Reason)}
	}
	return nil
}
