package server

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// cachedKinds are the kinds a leading server caches: what the scheduler's feed, the
// controllers and the agents' routes read (docs/store.md, "Shared cache").
var cachedKinds = []v4.Kind{v4.KindTaskGroup, v4.KindNode, v4.KindApplication, v4.KindProcess, v4.KindDeployment,
	v4.KindDaemonset, v4.KindDependency, v4.KindService, v4.KindEndpoint, v4.KindNotify}

// A server run as `berth server` runs it holds, once it leads and its controllers run,
// exactly one etcd watch per kind it caches, whoever reads the kind, and none of the
// others (berth_store_watches).
func TestLeaderHoldsOneWatchPerCachedKind(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	base, done := startRun(t, ctx, t.TempDir())
	t.Cleanup(func() { cancel(); <-done })
	want := map[string]int{}
	for _, k := range cachedKinds {
		want[string(k)] = 1
	}
	var got map[string]int
	deadline := time.Now().Add(30 * time.Second)
	for {
		got = storeWatches(t, base)
		if maps.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("store watches %v, want one of each of %v", got, slices.Sorted(maps.Keys(want)))
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // every controller runs by now: none opens a watch of its own
	if got = storeWatches(t, base); !maps.Equal(got, want) {
		t.Fatalf("store watches %v once the controllers run, want one of each of %v", got, slices.Sorted(maps.Keys(want)))
	}
}

var storeWatchesLine = regexp.MustCompile(`(?m)^berth_store_watches\{kind="([^"]+)"\} (\d+)$`)

// storeWatches reads berth_store_watches from the server's metrics, by kind.
func storeWatches(t *testing.T, base string) map[string]int {
	t.Helper()
	r := call(t, http.MethodGet, base+"/metrics", "")
	if r.code != http.StatusOK {
		t.Fatalf("metrics: %d", r.code)
	}
	out := map[string]int{}
	for _, m := range storeWatchesLine.FindAllStringSubmatch(string(r.body), -1) {
		n, err := strconv.Atoi(m[2])
		if err != nil {
			t.Fatal(fmt.Errorf("berth_store_watches of %s: %w", m[1], err))
		}
		out[m[1]] = n
	}
	return out
}
