package controller

import (
	"errors"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// On a one-node cluster a move to "another node" is refused; with OrHere (BCS's
// reschedule) the replacement starts on the same node, the old run stopped once it is
// ready; a node given with OrHere is bad input.
func TestMoveOrHereOnOneNode(t *testing.T) {
	e := newEnv(t, "node-1")
	src := e.runningProcess("web", 1)[0]
	var me *MoveError
	_, _, err := RequestMove(e.ctx, testStore, e.feed, "ctl", src.Metadata.Name, v4.MoveRequest{}, "")
	if !errors.As(err, &me) || !strings.Contains(me.Message, "no node other than node-1 can take instance 0") {
		t.Fatalf("a move anywhere on one node: %v", err)
	}
	_, _, err = RequestMove(e.ctx, testStore, e.feed, "ctl", src.Metadata.Name, v4.MoveRequest{Node: "node-1", OrHere: true}, "")
	if !errors.As(err, &me) || me.Field != "orHere" {
		t.Fatalf("orHere with a node: %v", err)
	}
	if _, _, err := RequestMove(e.ctx, testStore, e.feed, "ctl", src.Metadata.Name, v4.MoveRequest{OrHere: true}, ""); err != nil {
		t.Fatalf("orHere on one node: %v", err)
	}
	var repl *v4.TaskGroup
	e.eventually("a replacement on the same node", func() bool {
		for _, tg := range e.taskGroups("web") {
			if tg.Metadata.Annotations[v4.MovedFromAnnotation] == src.Metadata.Name {
				repl = tg
			}
		}
		return repl != nil
	})
	if repl.Spec.Node != "node-1" || repl.Spec.Index != src.Spec.Index {
		t.Fatalf("replacement on %s index %d", repl.Spec.Node, repl.Spec.Index)
	}
	e.report(repl, v4.StatusRunning, time.Now(), time.Time{})
	e.eventually("the old run stopped", func() bool { return e.tgByName(src.Metadata.Name).Spec.Desired == v4.DesiredStopped })
	e.operationEnded("web")
}

// With OrHere and another node that fits, the replacement goes there: the current node
// is the last choice.
func TestMoveOrHerePrefersAnotherNode(t *testing.T) {
	e := newEnv(t, "node-1", "node-2")
	src := e.runningProcess("web", 1)[0]
	if _, _, err := RequestMove(e.ctx, testStore, e.feed, "ctl", src.Metadata.Name, v4.MoveRequest{OrHere: true}, ""); err != nil {
		t.Fatal(err)
	}
	var repl *v4.TaskGroup
	e.eventually("a replacement", func() bool {
		for _, tg := range e.taskGroups("web") {
			if tg.Metadata.Annotations[v4.MovedFromAnnotation] == src.Metadata.Name {
				repl = tg
			}
		}
		return repl != nil
	})
	if repl.Spec.Node == src.Spec.Node {
		t.Fatalf("replacement on the source's node %s while another fits", repl.Spec.Node)
	}
}
