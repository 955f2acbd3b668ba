package cache

import (
	"context"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store/storetest"
)

func byName(o v4.Object) string { return o.GetMeta().Name }

// A registry hands every reader of a kind the one cache, with the union of the indexes
// its readers declared before it ran; an index asked for once it runs is an error unless
// the cache has it.
func TestRegistryOneCachePerKind(t *testing.T) {
	storetest.Reset(t, testStore)
	create(t, "a", "n1")
	r := NewRegistry(testStore, storetest.QuietLogger())
	if err := r.Index(v4.KindTaskGroup, "node", byNode); err != nil {
		t.Fatal(err)
	}
	if err := r.Indexes(v4.KindTaskGroup, map[string]IndexFunc{"name": byName, "node": byName}); err != nil {
		t.Fatal(err)
	}
	c := r.For(v4.KindTaskGroup)
	if r.For(v4.KindTaskGroup) != c {
		t.Fatal("two caches of one kind")
	}
	if len(r.Kinds()) != 0 {
		t.Fatalf("caches run before Start: %v", r.Kinds())
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.Start(ctx)
	r.Start(ctx) // a second Start does nothing
	t.Cleanup(func() { cancel(); r.Wait() })
	waitSynced(t, c)
	for index, value := range map[string]string{"node": "n1", "name": "a"} { // "node" kept its first function
		if objs, _, err := c.List(index, value); err != nil || len(objs) != 1 {
			t.Fatalf("List(%s, %s) = %d objects, %v", index, value, len(objs), err)
		}
	}
	if err := r.Index(v4.KindTaskGroup, "node", byNode); err != nil {
		t.Fatalf("an index the running cache has: %v", err)
	}
	if err := r.Index(v4.KindTaskGroup, "owner", byName); err == nil {
		t.Fatal("an index asked for after the cache started was accepted")
	}
	// What a cache keeps: the same function again passes once it runs (a server's
	// second term of leadership declares it again), another one or none does not.
	if err := r.Keep(v4.KindWorkflow, keepName); err != nil {
		t.Fatal(err)
	}
	waitSynced(t, r.For(v4.KindWorkflow))
	if err := r.Keep(v4.KindWorkflow, keepName); err != nil {
		t.Errorf("the same keep again: %v", err)
	}
	if err := r.Keep(v4.KindWorkflow, keepNothing); err == nil {
		t.Error("another keep after the cache started was accepted")
	}
	if err := r.Keep(v4.KindWorkflow, nil); err == nil {
		t.Error("no keep after the cache started was accepted")
	}
	// A kind first asked for after Start runs from then on.
	nodes := r.For(v4.KindNode)
	waitSynced(t, nodes)
	if got := len(r.Kinds()); got != 3 {
		t.Fatalf("%d caches run, want 3", got)
	}
}

func waitSynced(t *testing.T, c *Cache) {
	t.Helper()
	select {
	case <-c.Synced():
	case <-time.After(10 * time.Second):
		t.Fatalf("the %s cache did not sync", c.Kind())
	}
}

// Once Start's context has ended, a kind asked for does not start: shutdown does not race
// Wait with a new cache.
func TestRegistryStartsNothingAfterItsContext(t *testing.T) {
	r := NewRegistry(testStore, storetest.QuietLogger())
	ctx, cancel := context.WithCancel(context.Background())
	r.Start(ctx)
	r.For(v4.KindNode)
	if got := r.Kinds(); len(got) != 1 {
		t.Fatalf("running before the end: %v, want the node cache", got)
	}
	cancel()
	r.Wait()
	r.For(v4.KindService)
	if got := r.Kinds(); len(got) != 1 || got[0] != v4.KindNode {
		t.Fatalf("running after the end: %v, want only the node cache that ran before", got)
	}
	r.Wait()
}

// Kinds returns the kinds whose caches run (the tests' view of a registry).
func (r *Registry) Kinds() []v4.Kind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []v4.Kind
	for kind, e := range r.caches {
		if e.running {
			out = append(out, kind)
		}
	}
	return out
}

func keepName(o v4.Object) v4.Object    { return o }
func keepNothing(o v4.Object) v4.Object { return nil }
