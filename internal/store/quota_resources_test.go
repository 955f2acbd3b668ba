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

// A workload's instances (task groups a process owns) never count: they are decoded
// once, and a count after their status changed reads only their keys, while a job's
// task group is decoded again when it changes; a key deleted and created again is
// decoded again, whatever owns it now.
func TestNamespaceObjectsSkipsInstances(t *testing.T) {
	bg, _ := resetForQuota(t)
	tgOf := func(name string, owner v4.Kind) *v4.TaskGroup {
		return &v4.TaskGroup{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindTaskGroup},
			Metadata: v4.ObjectMeta{Name: name, Namespace: "ru"},
			Spec:     v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: owner, Name: "w"}, Node: "n1", Resources: v4.NodeResources{CPU: 1, MemoryMB: 32}},
			Status:   v4.TaskGroupStatus{Phase: v4.StatusStaging}}
	}
	inst, run := tgOf("0.w.ru.berth.1", v4.KindProcess), tgOf("0.w.ru.berth.2", v4.KindJob)
	for _, tg := range []*v4.TaskGroup{inst, run} {
		if err := testStore.Create(bg, tg, Raw{}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(step string, wantObjs int, wantCPU float64) {
		t.Helper()
		objs, err := testStore.NamespaceObjects(bg, "ru")
		if err != nil {
			t.Fatal(err)
		}
		if u := quota.Usage(objs); len(objs) != wantObjs || u[quota.CPU] != wantCPU {
			t.Errorf("%s: %d objects, usage %v; want %d and cpu %v", step, len(objs), u, wantObjs, wantCPU)
		}
	}
	count("created", 1, 1)
	key := objectKey(v4.KindTaskGroup, "ru", inst.Metadata.Name)
	if _, known := testStore.quota.objects.get(key, 0, 0); known != memoStale {
		t.Fatalf("the memo answers %v for a create revision it never saw", known)
	}
	for _, phase := range []string{v4.StatusRunning, v4.StatusFinish} {
		inst.Status.Phase, run.Status.Phase = phase, phase
		for _, tg := range []*v4.TaskGroup{inst, run} {
			if err := testStore.Update(bg, tg, Raw{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	count("both finished", 1, 0)
	resp, err := testStore.client.Get(bg, key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatal(resp, err)
	}
	kv := resp.Kvs[0]
	if o, known := testStore.quota.objects.get(key, kv.CreateRevision, kv.ModRevision+100); known != memoNever || o != nil {
		t.Errorf("the instance is remembered as %v %v, want never counted", o, known)
	}
	// The name again, now a job's: decoded, and counted.
	if _, err := testStore.Delete(bg, v4.KindTaskGroup, "ru", inst.Metadata.Name, ""); err != nil {
		t.Fatal(err)
	}
	if err := testStore.Create(bg, tgOf(inst.Metadata.Name, v4.KindJob), Raw{}); err != nil {
		t.Fatal(err)
	}
	count("the name again, a job's", 2, 1)
}
