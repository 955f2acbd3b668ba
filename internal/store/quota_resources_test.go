package store

import (
	"context"
	"fmt"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/quota"
)

func usageProc(t *testing.T, name string, n int, cpu string) v4.Object {
	t.Helper()
	docs, err := v4.Parse(fmt.Appendf(nil, `{"apiVersion":"v4","kind":"process","metadata":{"name":%q,"namespace":"ru"},"spec":{"instance":%d,"template":{"spec":{"processes":[{"procName":"web","startCmd":"./web","resources":{"requests":{"cpu":%q,"memory":"32"}}}]}}}}`,
		name, n, cpu))
	if err != nil {
		t.Fatal(err)
	}
	return docs[0].Object
}

// A namespace's resource usage is counted from the stored state: two stores (two
// servers) over the same etcd count the same, whichever wrote last, through updates,
// task groups of jobs that start and finish, and deletes; nothing is left to drift.
func TestResourceUsageFromStoredState(t *testing.T) {
	bg, _ := resetForQuota(t)
	other := &Store{client: testStore.client, log: testStore.log, keyring: testStore.keyring}
	other.quota.defaults = testStore.quota.defaults
	want := func(step string, cpu, instances float64) {
		t.Helper()
		for i, s := range []*Store{testStore, other} {
			u, err := s.ResourceUsage(bg, "ru")
			if err != nil {
				t.Fatal(err)
			}
			if u[quota.CPU] != cpu || u[quota.Instances] != instances {
				t.Errorf("%s: store %d counts %v, want cpu %v and %v instances", step, i, u, cpu, instances)
			}
		}
	}
	want("empty", 0, 0)
	if err := testStore.Create(bg, usageProc(t, "web", 2, "0.5"), Raw{}); err != nil {
		t.Fatal(err)
	}
	want("created", 1, 2)
	if err := other.Update(bg, usageProc(t, "web", 3, "0.5"), Raw{}); err != nil {
		t.Fatal(err)
	}
	want("scaled on the other server", 1.5, 3)
	tg := &v4.TaskGroup{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindTaskGroup},
		Metadata: v4.ObjectMeta{Name: "0.batch.ru.berth.1", Namespace: "ru"},
		Spec: v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindJob, Name: "batch"}, Node: "n1",
			Resources: v4.NodeResources{CPU: 1.1, MemoryMB: 96}, Overhead: v4.NodeResources{CPU: 0.1, MemoryMB: 64}},
		Status: v4.TaskGroupStatus{Phase: v4.StatusRunning}}
	if err := other.Create(bg, tg, Raw{}); err != nil {
		t.Fatal(err)
	}
	want("a job's run active", 2.5, 4)
	tg.Status.Phase = v4.StatusFinish
	if err := testStore.Update(bg, tg, Raw{}); err != nil {
		t.Fatal(err)
	}
	want("the run finished", 1.5, 3)
	if _, err := other.Delete(bg, v4.KindProcess, "ru", "web", ""); err != nil {
		t.Fatal(err)
	}
	want("deleted", 0, 0)
	if _, err := testStore.ResourceUsage(context.Background(), "a/b"); err == nil {
		t.Error("a bad namespace was counted")
	}
}

// A count that finds more changed objects of a kind than it reads one by one reads the
// kind's range instead, in the same transaction as the other kinds' changed objects:
// a store that decoded nothing yet and one that remembers some count the same.
func TestNamespaceObjectsManyChanged(t *testing.T) {
	bg, _ := resetForQuota(t)
	fresh := func() *Store {
		s := &Store{client: testStore.client, log: testStore.log, keyring: testStore.keyring}
		s.quota.defaults = testStore.quota.defaults
		return s
	}
	remembers := fresh()
	for i := range memoSingleReads + 3 {
		if err := testStore.Create(bg, usageProc(t, fmt.Sprintf("p%d", i), 1, "0.25"), Raw{}); err != nil {
			t.Fatal(err)
		}
		if i == 2 { // it decodes the first three, and later finds eight more changed
			if _, err := remembers.NamespaceObjects(bg, "ru"); err != nil {
				t.Fatal(err)
			}
		}
	}
	tg := &v4.TaskGroup{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindTaskGroup},
		Metadata: v4.ObjectMeta{Name: "0.batch.ru.berth.1", Namespace: "ru"},
		Spec:     v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindJob, Name: "batch"}, Node: "n1", Resources: v4.NodeResources{CPU: 1, MemoryMB: 32}},
		Status:   v4.TaskGroupStatus{Phase: v4.StatusRunning}}
	if err := testStore.Create(bg, tg, Raw{}); err != nil {
		t.Fatal(err)
	}
	for i, s := range []*Store{fresh(), remembers, remembers} {
		objs, err := s.NamespaceObjects(bg, "ru")
		if err != nil {
			t.Fatal(err)
		}
		u := quota.Usage(objs)
		if len(objs) != memoSingleReads+4 || u[quota.CPU] != 3.75 || u[quota.Instances] != 12 {
			t.Errorf("count %d: %d objects, usage %v; want %d objects, cpu 3.75 and 12 instances", i, len(objs), u, memoSingleReads+4)
		}
	}
}
