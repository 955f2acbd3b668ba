package controller

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// storeDirect writes obj straight into etcd, past the API's validation, as a hand edit or
// an older berth with other limits would.
func storeDirect(t *testing.T, doc string, edit func(v4.Object)) {
	t.Helper()
	docs, err := v4.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	obj := docs[0].Object
	edit(obj)
	if err := testStore.Create(context.Background(), obj, store.Raw{}); err != nil {
		t.Fatal(err)
	}
}

const (
	hugeProcess = `{"apiVersion":"v4","kind":"process","metadata":{"name":"huge","namespace":"ctl"},
		"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"web","startCmd":"./web"}]}}}}`
	hugeDeployment = `{"apiVersion":"v4","kind":"deployment","metadata":{"name":"bomb","namespace":"ctl"},
		"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"web","startCmd":"./web"}]}}}}`
)

// TestInvalidObjectsStoredPastValidation stores a process and a deployment of 10^15
// instances straight into etcd (the count that crashed the leader on every start): the
// controllers refuse them with an InvalidSpec event and a status message, place nothing for
// them, keep their memory flat, and keep reconciling a valid process beside them.
func TestInvalidObjectsStoredPastValidation(t *testing.T) {
	e := newEnv(t, "node-1")
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan struct{})
	dc := NewDeploymentController(testStore, e.opts())
	go func() { dc.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	storeDirect(t, hugeProcess, func(o v4.Object) { o.(*v4.Process).Spec.Instance = 1e15 })
	storeDirect(t, hugeDeployment, func(o v4.Object) { o.(*v4.Deployment).Spec.Instance = 1e15 })
	e.apply("fine", 2, `{"policy":"Never"}`)

	e.eventually("the valid process placed", func() bool { return len(e.taskGroups("fine")) == 2 })
	e.eventually("InvalidSpec on the process and the deployment", func() bool {
		return slices.Contains(e.reasons(v4.KindProcess, "huge"), "InvalidSpec") &&
			slices.Contains(e.reasons(v4.KindDeployment, "bomb"), "InvalidSpec")
	})
	e.eventually("the status says why", func() bool { return strings.Contains(e.status("huge").Message, "spec.instance") })
	if n := len(e.taskGroups("huge")); n != 0 {
		t.Fatalf("%d task groups placed for an invalid process", n)
	}
	if _, err := testStore.Get(context.Background(), v4.KindProcess, "ctl", "bomb"); err == nil {
		t.Fatal("the invalid deployment got an application")
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 64<<20 {
		t.Fatalf("heap grew by %d MB over objects of 10^15 instances", grew>>20)
	}

	// A valid version stored over it is acted on.
	o, err := testStore.Get(context.Background(), v4.KindProcess, "ctl", "huge")
	if err != nil {
		t.Fatal(err)
	}
	o.(*v4.Process).Spec.Instance = 1
	if err := testStore.Update(context.Background(), o, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("the fixed process placed", func() bool { return len(e.taskGroups("huge")) == 1 })
	e.eventually("its message cleared", func() bool {
		return !strings.Contains(e.status("huge").Message, "invalid")
	})
}
