package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// applyDoc applies one process document in namespace ctl.
func (e *env) applyDoc(doc string) {
	e.t.Helper()
	docs, err := v4.Parse([]byte(doc))
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := testStore.Apply(context.Background(), docs); err != nil {
		e.t.Fatal(err)
	}
}

// statefulProcess applies a stateful process with one instance.
func statefulDoc(name string) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"process","metadata":{"name":%q,"namespace":"ctl","annotations":{"berth.io/stateful":"true"}},
		"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"db","startCmd":"./db","resources":{"limits":{"cpu":"0.5","memory":"64"}}}]}}}}`, name)
}

func TestRequestMoveRefusals(t *testing.T) {
	e := newEnv(t, "node-1", "node-2")
	e.node("small")
	small := store.Typed[*v4.Node](testStore, v4.KindNode)
	n, err := small.Get(e.ctx, "", "small")
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Disabled = true
	if err := small.Update(e.ctx, n, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	web := e.runningProcess("web", 1)[0]
	e.applyDoc(statefulDoc("db"))
	e.eventually("db placed", func() bool { return len(e.taskGroups("db")) == 1 })
	db := e.taskGroups("db")[0]
	e.report(db, v4.StatusRunning, time.Now(), time.Time{})

	other := "node-1"
	if web.Spec.Node == other {
		other = "node-2"
	}
	tests := []struct {
		name     string
		tg       string
		req      v4.MoveRequest
		notFound bool
		field    string
		contains string
		stateful bool
	}{
		{name: "unknown task group", tg: "0.nope.ctl.berth.1", notFound: true, contains: "not found"},
		{name: "unknown node", tg: web.Metadata.Name, req: v4.MoveRequest{Node: "nowhere"}, notFound: true, field: "node", contains: "node nowhere not found"},
		{name: "its own node", tg: web.Metadata.Name, req: v4.MoveRequest{Node: web.Spec.Node}, field: "node", contains: "already"},
		{name: "a node that cannot take it says why", tg: web.Metadata.Name, req: v4.MoveRequest{Node: "small"}, field: "node", contains: "node small cannot take instance 0: 1 node: 1 node disabled"},
		{name: "stateful without force", tg: db.Metadata.Name, req: v4.MoveRequest{Node: other}, field: "force", contains: "is stateful", stateful: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := RequestMove(e.ctx, testStore, e.feed, "ctl", tc.tg, tc.req, "")
			var me *MoveError
			if !errors.As(err, &me) {
				t.Fatalf("got %v, want a MoveError", err)
			}
			if me.NotFound != tc.notFound || me.Field != tc.field || !strings.Contains(me.Message, tc.contains) || errors.Is(err, ErrStateful) != tc.stateful {
				t.Fatalf("got %+v (stateful %v), want notFound %v field %q containing %q", me, errors.Is(err, ErrStateful), tc.notFound, tc.field, tc.contains)
			}
		})
	}
	if tg := e.tgByName(web.Metadata.Name); tg.Metadata.Annotations[v4.MoveToAnnotation] != "" {
		t.Fatal("a refused move changed the task group")
	}
	if op, _ := testStore.Operation(e.ctx, v4.KindProcess, "ctl", "web"); op != nil {
		t.Fatalf("a refused move left an operation: %+v", op)
	}
	// Forced, the stateful instance moves; a second move of the same application is locked.
	if _, _, err := RequestMove(e.ctx, testStore, e.feed, "ctl", db.Metadata.Name, v4.MoveRequest{Force: true}, ""); err != nil {
		t.Fatalf("forced move: %v", err)
	}
	_, _, err = RequestMove(e.ctx, testStore, e.feed, "ctl", db.Metadata.Name, v4.MoveRequest{Force: true}, "")
	if !errors.Is(err, store.ErrLocked) {
		t.Fatalf("a second move during the first: got %v, want locked", err)
	}
}

func TestMaintenanceHoldsRestarts(t *testing.T) {
	e := newEnv(t, "node-1")
	tg := e.runningProcess("web", 1)[0]
	if _, err := testStore.SetEngine(e.ctx, v4.Engine{Maintenance: true, Reason: "kernel upgrade"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testStore.SetEngine(context.Background(), v4.Engine{}) })
	e.report(tg, v4.StatusFailed, time.Now().Add(-time.Second), time.Now())
	e.eventually("a RestartHeld event", func() bool {
		events, _ := testStore.ListEvents(e.ctx, v4.EventFilter{Kind: v4.KindProcess, Namespace: "ctl", Name: "web"})
		for _, ev := range events {
			if ev.Reason == "RestartHeld" && strings.Contains(ev.Message, "kernel upgrade") {
				return true
			}
		}
		return false
	})
	if tgs := e.taskGroups("web"); len(tgs) != 1 || tgs[0].Metadata.Name != tg.Metadata.Name {
		t.Fatalf("restarted during maintenance: %d task groups", len(tgs))
	}
	if _, err := testStore.SetEngine(e.ctx, v4.Engine{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("restarted once maintenance is off", func() bool {
		tgs := e.taskGroups("web")
		return len(tgs) == 1 && tgs[0].Metadata.Name != tg.Metadata.Name
	})
}
