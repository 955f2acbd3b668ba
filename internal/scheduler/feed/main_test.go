package feed

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
)

// testStore is one embedded etcd shared by the package's tests.
var testStore *store.Store

func TestMain(m *testing.M) { os.Exit(storetest.Run(m, &testStore)) }

func quietLogger() *slog.Logger { return storetest.QuietLogger() }

// resetStore starts a test from an empty keyspace (go test -count=N included).
func resetStore(t *testing.T) { storetest.Reset(t, testStore) }

// runFeed runs a feed until the test ends and waits for its first sync.
func runFeed(t *testing.T, f *Feed) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-f.Synced():
	case <-time.After(10 * time.Second):
		t.Fatal("feed not synced within 10s")
	}
}

func createNode(t *testing.T, name string) {
	t.Helper()
	storetest.CreateNode(t, testStore, name, v4.NodeResources{CPU: 4, MemoryMB: 8192, DiskMB: 10000})
}

func tgName(app string, index int) string {
	return strconv.Itoa(index) + "." + app + ".feed.berth.1700000000000000000"
}

func createTaskGroup(t *testing.T, app string, index int, node, phase string) {
	t.Helper()
	tg := &v4.TaskGroup{
		TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindTaskGroup},
		Metadata: v4.ObjectMeta{Name: tgName(app, index), Namespace: "feed"},
		Spec: v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindProcess, Name: app}, Index: index, Node: node,
			Resources: v4.NodeResources{CPU: 1, MemoryMB: 256}},
		Status: v4.TaskGroupStatus{Phase: phase},
	}
	if err := testStore.Create(context.Background(), tg, store.Raw{}); err != nil {
		t.Fatal(err)
	}
}

func appKey(name string) scheduler.AppKey {
	return scheduler.AppKey{Kind: v4.KindProcess, Namespace: "feed", Name: name}
}

// state is what the tests observe of a snapshot.
type state struct {
	nodes   int
	indexes string
}

func observe(f *Feed, app string) state {
	var s state
	f.With(func(snap *scheduler.Snapshot) {
		s = state{nodes: snap.Nodes(), indexes: fmt.Sprint(snap.Indexes(appKey(app)))}
	})
	return s
}

// eventually polls until the snapshot shows want, since the feed applies changes
// asynchronously.
func eventually(t *testing.T, f *Feed, app string, want state) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := observe(f, app)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("snapshot: %+v, want %+v", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
