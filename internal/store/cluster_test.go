package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

func testNode(name string) *v4.Node {
	n := &v4.Node{
		TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindNode},
		Metadata: v4.ObjectMeta{Name: name},
		Spec:     v4.NodeSpec{Capacity: v4.NodeResources{CPU: 4, MemoryMB: 8192}},
	}
	v4.DefaultNode(n)
	return n
}

func testTaskGroup(ns, app string, index int, node string) *v4.TaskGroup {
	return &v4.TaskGroup{
		TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindTaskGroup},
		Metadata: v4.ObjectMeta{Name: taskGroupID(ns, app, index), Namespace: ns},
		Spec: v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindProcess, Name: app}, Index: index, Node: node,
			Resources: v4.NodeResources{CPU: 1, MemoryMB: 512}},
	}
}

func taskGroupID(ns, app string, index int) string {
	return string(rune('0'+index)) + "." + app + "." + ns + ".berth.1700000000000000000"
}

// Nodes are cluster-scoped: namespace "", keys without a namespace segment, and every
// operation works on them as on namespaced kinds.
func TestClusterScopedNodes(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	nodes := Typed[*v4.Node](testStore, v4.KindNode)
	for _, name := range []string{"node-b", "node-a.rack-1", "node-c"} {
		if err := nodes.Create(ctx, testNode(name), Raw{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := nodes.Create(ctx, testNode("node-c"), Raw{}); !errors.Is(err, ErrAlreadyExists) {
		t.Fatalf("second create: %v", err)
	}
	resp, err := testStore.Client().Get(ctx, prefix+"objects/node/node-b")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("node key layout: %v, %d keys", err, len(resp.Kvs))
	}

	list, rev, err := nodes.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range list {
		names = append(names, n.Metadata.Name)
	}
	if want := "node-a.rack-1 node-b node-c"; strings.Join(names, " ") != want {
		t.Fatalf("list = %s, want %s", strings.Join(names, " "), want)
	}

	ctxW, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ch, err := nodes.Watch(ctxW, "", rev)
	if err != nil {
		t.Fatal(err)
	}
	got, err := nodes.Get(ctx, "", "node-b")
	if err != nil {
		t.Fatal(err)
	}
	got.Spec.Disabled = true
	if err := nodes.Update(ctx, got, Raw{}); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes.Delete(ctx, "", "node-c", ""); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		typ  EventType
		name string
	}{{Modified, "node-b"}, {Deleted, "node-c"}} {
		select {
		case ev := <-ch:
			if ev.Type != want.typ || ev.Object.Metadata.Name != want.name {
				t.Fatalf("event %s %s, want %s %s", ev.Type, ev.Object.Metadata.Name, want.typ, want.name)
			}
		case <-ctxW.Done():
			t.Fatal("no watch event")
		}
	}

	// A namespace is refused for nodes, in every operation.
	if _, err := testStore.Get(ctx, v4.KindNode, "ns-a", "node-b"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("get with a namespace: %v", err)
	}
	if _, _, err := testStore.List(ctx, v4.KindNode, "ns-a"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("list with a namespace: %v", err)
	}
	if _, err := testStore.Get(ctx, v4.KindNode, "", ""); !errors.Is(err, ErrInvalid) {
		t.Fatalf("get without a name: %v", err)
	}
	bad := testNode("x")
	bad.Metadata.Namespace = "ns-a"
	if err := testStore.Create(ctx, bad, Raw{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("create with a namespace: %v", err)
	}
	if n, err := testStore.Count(ctx, v4.KindNode); err != nil || n != 2 {
		t.Fatalf("count = %d, %v", n, err)
	}
}

// Task groups are namespaced system objects: the store treats them like any kind.
func TestTaskGroups(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	tgs := Typed[*v4.TaskGroup](testStore, v4.KindTaskGroup)
	for i := range 3 {
		if err := tgs.Create(ctx, testTaskGroup("tg-a", "web", i, "node-1"), Raw{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tgs.Create(ctx, testTaskGroup("tg-b", "web", 0, "node-2"), Raw{}); err != nil {
		t.Fatal(err)
	}
	inA, _, err := tgs.List(ctx, "tg-a")
	if err != nil || len(inA) != 3 {
		t.Fatalf("list tg-a: %d, %v", len(inA), err)
	}
	all, _, err := tgs.List(ctx, "")
	if err != nil || len(all) != 4 {
		t.Fatalf("list all: %d, %v", len(all), err)
	}
	got, err := tgs.Get(ctx, "tg-a", taskGroupID("tg-a", "web", 1))
	if err != nil || got.Spec.Index != 1 || got.Spec.Node != "node-1" {
		t.Fatalf("get: %+v, %v", got, err)
	}
	got.Status.Phase = v4.StatusRunning
	if err := tgs.Update(ctx, got, Raw{}); err != nil {
		t.Fatal(err)
	}
	if _, err := tgs.Delete(ctx, "tg-b", taskGroupID("tg-b", "web", 0), ""); err != nil {
		t.Fatal(err)
	}
}
