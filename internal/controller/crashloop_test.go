package controller

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
)

// crashingAgent fails every task group of the process at once, as an agent would report a
// startCmd that exits with code 1 right after it started. It counts the runs it saw and
// the most task groups the instance had at one time.
type crashingAgent struct {
	mu      sync.Mutex
	runs    map[string]bool
	mostTGs int
}

func (a *crashingAgent) run(ctx context.Context, e *env, name string) {
	for ctx.Err() == nil {
		tgs := e.taskGroups(name)
		a.mu.Lock()
		a.mostTGs = max(a.mostTGs, len(tgs))
		a.mu.Unlock()
		for _, tg := range tgs {
			if tg.Status.Phase != v4.StatusStaging {
				continue
			}
			a.mu.Lock()
			a.runs[tg.Metadata.Name] = true
			a.mu.Unlock()
			now := time.Now().UTC()
			tg.Status = v4.TaskGroupStatus{Phase: v4.StatusFailed, StartedAt: now.Add(-50 * time.Millisecond), FinishedAt: now,
				Tasks: []v4.TaskStatus{{Name: "web", Status: v4.StatusFailed, Info: v4.ContainerInfo{ExitCode: 1}}}}
			_ = testStore.Update(ctx, tg, store.Raw{}) // a conflict is retried on the next round
		}
		sleep(ctx, 20*time.Millisecond)
	}
}

// TestCrashLoopBacksOff reproduces a process whose startCmd exits at once with no
// restartPolicy (BCS's interval 0): without a floor it restarted about 5 times a second
// (206 restarts in 43 s). With the crash-loop floor (2 s, 4 s, 8 s, ...) it restarts at
// most 4 times in 12 s, keeps at most two task groups of the instance, and says so in
// its status.
func TestCrashLoopBacksOff(t *testing.T) {
	e := newEnv(t, "node-1")
	e.apply("crashy", 1, `{"policy":"OnFailure"}`)
	ctx, cancel := context.WithCancel(e.ctx)
	a := &crashingAgent{runs: map[string]bool{}}
	var wg sync.WaitGroup
	wg.Go(func() { a.run(ctx, e, "crashy") })
	time.Sleep(12 * time.Second)
	cancel()
	wg.Wait()

	a.mu.Lock()
	runs, most := len(a.runs), a.mostTGs
	a.mu.Unlock()
	if runs < 2 || runs > 5 { // the first run and at most 4 restarts (at 2, 6 and 14 s)
		t.Fatalf("%d runs in 12 s of a crash loop, want 2 to 5", runs)
	}
	if most > 2 {
		t.Fatalf("the instance had %d task groups at once; ended runs must not pile up", most)
	}
	e.eventually("CrashLoopBackOff in the status", func() bool {
		st := e.status("crashy")
		return len(st.BackOff) == 1 && st.BackOff[0].Reason == "CrashLoopBackOff" &&
			st.BackOff[0].LastExit == "task web exited with code 1" && st.BackOff[0].RestartAt.After(time.Now()) &&
			strings.Contains(st.Message, "CrashLoopBackOff")
	})
	tgs := e.taskGroups("crashy")
	if len(tgs) != 1 || tgs[0].Spec.CrashLoops != runs-1 {
		t.Fatalf("task groups %d, crashLoops of the last %d, want 1 and %d", len(tgs), tgs[0].Spec.CrashLoops, runs-1)
	}
	storetest.FlushEvents(t, testStore)
	events, err := testStore.ListEvents(context.Background(), v4.EventFilter{Namespace: "ctl", Name: "crashy"})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) > 12*runs {
		t.Fatalf("%d events for %d runs", len(events), runs)
	}
}
