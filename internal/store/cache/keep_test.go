package cache

import (
	"context"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store/storetest"
)

// Config.Keep: Get, List and a watch's first list see what the cache keeps of an object
// (here, of a task group bound to node "slim", no owner); the changes watchers get carry
// the objects as written; an object that stops matching is kept whole again.
func TestCacheKeep(t *testing.T) {
	storetest.Reset(t, testStore)
	keep := func(o v4.Object) v4.Object {
		tg := o.(*v4.TaskGroup)
		if tg.Spec.Node != "slim" {
			return o
		}
		cp := *tg
		cp.Spec.Owner = v4.OwnerRef{}
		return &cp
	}
	c := startCacheWith(t, Config{Keep: keep})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	from := c.Rev()
	create(t, "a", "n1")
	create(t, "b", "slim")
	caughtUp(t, c)
	owner := func(name string) string {
		o, ok := c.Get("ns", name)
		if !ok {
			t.Fatalf("%s not cached", name)
		}
		return o.(*v4.TaskGroup).Spec.Owner.Name
	}
	if owner("a") != "app" || owner("b") != "" {
		t.Fatalf("cached owners: a %q, b %q", owner("a"), owner("b"))
	}
	ch, err := c.Watch(ctx, "", "", from)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if ev := next(t, ch); ev.Object.(*v4.TaskGroup).Spec.Owner.Name != "app" {
			t.Errorf("the change of %s carries the object as kept, not as written", ev.Object.GetMeta().Name)
		}
	}
	list, err := c.Watch(ctx, "node", "slim", 0)
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, list); ev.Object.(*v4.TaskGroup).Spec.Owner.Name != "" {
		t.Error("a watch's first list does not see what the cache keeps")
	}
	move(t, "b", "n2")
	deadline := time.Now().Add(5 * time.Second)
	for owner("b") != "app" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if owner("b") != "app" {
		t.Error("b moved off the slim node is still kept slim")
	}
}
