package controller

import (
	"fmt"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
)

// TestStatusCountsArePaced: a status whose counts alone moved within statusPace of the
// last write is not written, and the controller is told when to look again; a change of
// phase is written at once; once the pace has passed, the counts are written.
func TestStatusCountsArePaced(t *testing.T) {
	e := newTestEnv(t)
	e.apply("paced", 3, `{"policy":"Always"}`)
	c := NewAppController(testStore, e.feed, e.opts())
	key := scheduler.AppKey{Kind: v4.KindProcess, Namespace: "ctl", Name: "paced"}
	status := func(phase string, running int) v4.WorkloadStatus {
		return v4.WorkloadStatus{Phase: phase, Instances: 3, Running: running}
	}
	write := func(st v4.WorkloadStatus) time.Duration {
		t.Helper()
		later, err := c.updateStatus(e.ctx, key, st)
		if err != nil {
			t.Fatal(err)
		}
		return later
	}
	for _, step := range []struct {
		what        string
		st          v4.WorkloadStatus
		before      func()
		paced       bool
		wantPhase   string
		wantRunning int
	}{
		{"the first write", status(v4.StatusStaging, 1), nil, false, v4.StatusStaging, 1},
		{"counts alone, at once after", status(v4.StatusStaging, 2), nil, true, v4.StatusStaging, 1},
		{"a new phase", status(v4.StatusRunning, 3), nil, false, v4.StatusRunning, 3},
		{"counts alone again", status(v4.StatusRunning, 2), nil, true, v4.StatusRunning, 3},
		{"the same counts once the pace passed", status(v4.StatusRunning, 2), func() {
			c.pace.mu.Lock()
			c.pace.last[key] = c.pace.last[key].Add(-statusPace)
			c.pace.mu.Unlock()
		}, false, v4.StatusRunning, 2},
	} {
		if step.before != nil {
			step.before()
		}
		later := write(step.st)
		if paced := later > 0; paced != step.paced || later > statusPace {
			t.Fatalf("%s: look again after %v, want paced %v (within %v)", step.what, later, step.paced, statusPace)
		}
		if got := e.status("paced"); got.Phase != step.wantPhase || got.Running != step.wantRunning {
			t.Fatalf("%s: stored %s with %d running, want %s with %d", step.what, got.Phase, got.Running, step.wantPhase, step.wantRunning)
		}
	}
}

func TestCountsOnly(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cur := v4.WorkloadStatus{Phase: v4.StatusRunning, Instances: 3, Running: 2,
		BackOff: []v4.InstanceBackOff{{Index: 1, TaskGroup: "tg-1", Reason: "BackOff", RestartAt: at}}}
	for _, tc := range []struct {
		name   string
		change func(*v4.WorkloadStatus)
		want   bool
	}{
		{"running", func(s *v4.WorkloadStatus) { s.Running = 3 }, true},
		{"stopped", func(s *v4.WorkloadStatus) { s.Stopped = 1 }, true},
		{"pending", func(s *v4.WorkloadStatus) { s.Pending = &v4.Pending{Reason: v4.PendingUnschedulable} }, true},
		{"the back-off's time, in another zone", func(s *v4.WorkloadStatus) {
			s.BackOff = []v4.InstanceBackOff{{Index: 1, TaskGroup: "tg-1", Reason: "BackOff", RestartAt: at.In(time.FixedZone("x", 3600))}}
		}, true},
		{"phase", func(s *v4.WorkloadStatus) { s.Phase = v4.StatusFailed }, false},
		{"last phase", func(s *v4.WorkloadStatus) { s.LastPhase = v4.StatusStaging }, false},
		{"instances", func(s *v4.WorkloadStatus) { s.Instances = 4 }, false},
		{"message", func(s *v4.WorkloadStatus) { s.Message = "held" }, false},
		{"a back-off more", func(s *v4.WorkloadStatus) { s.BackOff = append(s.BackOff, v4.InstanceBackOff{Index: 2}) }, false},
		{"a back-off's restart", func(s *v4.WorkloadStatus) {
			s.BackOff = []v4.InstanceBackOff{{Index: 1, TaskGroup: "tg-1", Reason: "BackOff", RestartAt: at, Restart: 2}}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := cur
			next.BackOff = append([]v4.InstanceBackOff(nil), cur.BackOff...)
			tc.change(&next)
			if got := countsOnly(cur, next); got != tc.want {
				t.Fatalf("countsOnly %v, want %v", got, tc.want)
			}
		})
	}
}

// TestStatusPacerForgets: past paceSweepAt workloads, a write forgets those written more
// than statusPace before, so the pacer stays as small as the workloads being written.
func TestStatusPacerForgets(t *testing.T) {
	var p statusPacer
	now := time.Now()
	for i := range paceSweepAt {
		p.wrote(scheduler.AppKey{Kind: v4.KindProcess, Namespace: "ns", Name: fmt.Sprintf("w%d", i)}, now.Add(-time.Minute))
	}
	fresh := scheduler.AppKey{Kind: v4.KindProcess, Namespace: "ns", Name: "fresh"}
	p.wrote(fresh, now)
	if len(p.last) != 1 {
		t.Fatalf("%d workloads remembered, want only the one just written", len(p.last))
	}
	if d := p.wait(fresh, now.Add(statusPace/2)); d != statusPace/2 {
		t.Fatalf("wait %v, want %v", d, statusPace/2)
	}
	p.forget(fresh)
	if d := p.wait(fresh, now); d != 0 {
		t.Fatalf("a forgotten workload waits %v", d)
	}
}
