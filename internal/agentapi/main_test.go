package agentapi

import (
	"context"
	"os"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
)

// The agent protocol's routes are tested through the whole server (internal/server's
// agent_*_test.go); these tests are of what only this package sees.

// testStore is one embedded etcd for the package's tests.
var testStore *store.Store

func TestMain(m *testing.M) { os.Exit(storetest.Run(m, &testStore)) }

// createTaskGroup stores a task group of one process bound to node, in phase.
func createTaskGroup(t testing.TB, ns, name, node, phase string) {
	t.Helper()
	tg := storetest.ProcessTaskGroup(ns, name, node)
	tg.Status.Phase = phase
	if err := testStore.Create(context.Background(), tg, store.Raw{}); err != nil {
		t.Fatal(err)
	}
}

// getTaskGroup reads a task group from the store.
func getTaskGroup(t *testing.T, ns, name string) *v4.TaskGroup {
	t.Helper()
	obj, err := testStore.Get(context.Background(), v4.KindTaskGroup, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*v4.TaskGroup)
}
