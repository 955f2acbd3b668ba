package store

import (
	"context"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// Watches counts a kind's open watches until each ends.
func TestWatchesCountsOpenWatches(t *testing.T) {
	st := testStore
	base := st.Watches() // what earlier tests left closing
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, err := st.Watch(ctx, v4.KindNode, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	other, stop := context.WithCancel(ctx)
	if _, err := st.Watch(other, v4.KindNode, "", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Watch(ctx, v4.KindService, "ns", 0); err != nil {
		t.Fatal(err)
	}
	if got := st.Watches(); got[v4.KindNode]-base[v4.KindNode] != 2 || got[v4.KindService]-base[v4.KindService] != 1 {
		t.Fatalf("Watches() = %v, want 2 of nodes and 1 of services", got)
	}
	stop()
	waitFor(t, func() bool { return st.Watches()[v4.KindNode] <= base[v4.KindNode]+1 }, "one node watch left")
	cancel()
	for range first {
	}
	waitFor(t, func() bool {
		return st.Watches()[v4.KindNode] <= base[v4.KindNode] && st.Watches()[v4.KindService] <= base[v4.KindService]
	}, "no watch left")
}
