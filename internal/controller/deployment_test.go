package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
)

// deployEnv runs the application and deployment controllers plus a fake agent that
// starts every task group at once (healthy, or failed when its template's env has
// FAIL=1) and ends those asked to stop.
type deployEnv struct {
	*env
	mu      sync.Mutex
	minSeen int // fewest available instances seen while sampling
	stop    func()
}

func newDeployEnv(t *testing.T) *deployEnv {
	e := &deployEnv{env: newEnv(t, "node-1", "node-2"), minSeen: -1}
	ctx, cancel := context.WithCancel(e.ctx)
	var wg sync.WaitGroup
	wg.Go(func() { e.fakeAgent(ctx) })
	e.startController()
	t.Cleanup(func() { cancel(); wg.Wait(); e.stop() })
	return e
}

// startController runs a fresh deployment controller, as a new leader would.
func (e *deployEnv) startController() {
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan struct{})
	c := NewDeploymentController(testStore, e.opts())
	go func() { c.Run(ctx); close(done) }()
	e.stop = func() { cancel(); <-done }
}

func (e *deployEnv) fakeAgent(ctx context.Context) {
	for ctx.Err() == nil {
		objs, _, err := testStore.List(ctx, v4.KindTaskGroup, "ctl")
		if err != nil {
			continue
		}
		for _, o := range objs {
			tg := o.(*v4.TaskGroup)
			st := tg.Status
			switch {
			case tg.Spec.Desired == v4.DesiredStopped && !v4.Terminal(st.Phase):
				st = v4.TaskGroupStatus{Phase: v4.StatusFinish, FinishedAt: time.Now()}
			case st.Phase == v4.StatusStaging && strings.Contains(fmt.Sprint(tg.Spec.Template.Spec.Processes[0].Env), "FAIL"):
				st = v4.TaskGroupStatus{Phase: v4.StatusFailed, HealthKilled: true, Message: "health check failed 2 times", FinishedAt: time.Now()}
			case st.Phase == v4.StatusStaging:
				st = v4.TaskGroupStatus{Phase: v4.StatusRunning, Healthy: new(true), StartedAt: time.Now()}
			default:
				continue
			}
			tg.Status = st
			_ = testStore.Update(ctx, tg, store.Raw{}) // a conflict is retried on the next round
		}
		sleep(ctx, 30*time.Millisecond)
	}
}

func (e *deployEnv) resetMin() {
	e.mu.Lock()
	e.minSeen = -1
	e.mu.Unlock()
}

// sample counts the available instances of every revision as the rollout sees them.
func (e *deployEnv) sample() int {
	n := 0
	for _, tg := range e.listTaskGroups("ctl", nil) {
		if tg.Status.Phase == v4.StatusRunning && tg.Spec.Desired != v4.DesiredStopped && tg.Status.Healthy != nil && *tg.Status.Healthy {
			n++
		}
	}
	e.mu.Lock()
	if e.minSeen < 0 || n < e.minSeen {
		e.minSeen = n
	}
	e.mu.Unlock()
	return n
}

func (e *deployEnv) applyDeployment(env string, extra string) {
	e.t.Helper()
	e.applyDeploymentN(env, extra, 4)
}

// applyDeploymentN is applyDeployment with n instances.
func (e *deployEnv) applyDeploymentN(env string, extra string, n int) {
	e.t.Helper()
	doc := fmt.Sprintf(`{"apiVersion":"v4","kind":"deployment","metadata":{"name":"web","namespace":"ctl","labels":{"app":"web"}},
		"restartPolicy":{"policy":"Never"},
		"spec":{"instance":%d,"template":{"spec":{"processes":[{"procName":"web","startCmd":"./web",
			"env":[{"name":"V","value":%q}],
			"ports":[{"name":"http","hostPort":0,"protocol":"http"}],
			"healthChecks":[{"type":"HTTP","intervalSeconds":2,"timeoutSeconds":1,"http":{"portName":"http","path":"/healthz"}}],
			"resources":{"limits":{"cpu":"0.1","memory":"32"}}}]}},
		"strategy":{"rollingupdate":{"maxUnavailable":1,"maxSurge":1%s}}}}`, n, env, extra)
	docs, err := v4.Parse([]byte(doc))
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := testStore.Apply(context.Background(), docs); err != nil {
		e.t.Fatal(err)
	}
}

func (e *deployEnv) deployment() *v4.Deployment {
	e.t.Helper()
	o, err := testStore.Get(context.Background(), v4.KindDeployment, "ctl", "web")
	if err != nil {
		e.t.Fatal(err)
	}
	return o.(*v4.Deployment)
}

// instancesOf returns the spec.instance of the process, -1 when it does not exist.
func instancesOf(name string) int {
	o, err := testStore.Get(context.Background(), v4.KindProcess, "ctl", name)
	if err != nil {
		return -1
	}
	return o.(*v4.Process).Spec.Instance
}

// waitSampling polls cond, sampling availability on every round.
func (e *deployEnv) waitSampling(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		e.sample()
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	d := e.deployment()
	e.t.Fatalf("timed out waiting for %s; status %+v", what, d.Status)
}

func TestDeploymentRollsOutSuspendsOnFailureAndUndoes(t *testing.T) {
	e := newDeployEnv(t)
	ctx := context.Background()
	e.applyDeployment("one", "")
	e.waitSampling("revision 1 running", func() bool {
		d := e.deployment()
		return d.Status.Phase == v4.DeploymentRunning && d.Status.Revision == 1 && d.Status.CurrentAvailable == 4
	})
	ch, _ := testStore.Get(ctx, v4.KindProcess, "ctl", "web-v1")
	if m := ch.GetMeta(); m.Annotations[v4.ControlledByAnnotation] != "deployment/web" || m.Labels["app"] != "web" {
		t.Errorf("web-v1 metadata %+v", m)
	}

	// A new template rolls over with at most 5 wanted and at least 3 available.
	e.resetMin()
	e.applyDeployment("two", "")
	e.waitSampling("the rollout to begin", func() bool {
		op, _ := testStore.Operation(ctx, v4.KindDeployment, "ctl", "web")
		return instancesOf("web-v2") >= 0 && (op != nil || instancesOf("web-v1") < 0)
	})
	err := testStore.BeginOperation(ctx, "ctl", "web", v4.Operation{Type: v4.OpScale, Kind: v4.KindDeployment, Name: "ctl/web"}, v4.OpScale)
	if instancesOf("web-v1") >= 0 && !errors.Is(err, store.ErrLocked) {
		t.Errorf("a scale during the rollout: %v, want locked", err)
	}
	e.waitSampling("revision 2 running alone", func() bool {
		d := e.deployment()
		if w1, w2 := instancesOf("web-v1"), instancesOf("web-v2"); max(w1, 0)+w2 > 5 {
			t.Fatalf("%d + %d instances wanted, more than 4 + maxSurge 1", w1, w2)
		}
		return d.Status.Phase == v4.DeploymentRunning && d.Status.Revision == 2 && d.Status.CurrentAvailable == 4 && instancesOf("web-v1") == -1
	})
	t.Logf("fewest available during the rollout: %d", e.minSeen)
	if e.minSeen < 3 {
		t.Errorf("only %d instances available at one point, want at least 4 - maxUnavailable 1", e.minSeen)
	}
	e.eventually("the rollout operation ended", func() bool {
		op, _ := testStore.Operation(ctx, v4.KindDeployment, "ctl", "web")
		return op == nil
	})

	// A failing revision suspends the rollout; undo goes back to revision 2.
	e.applyDeployment("FAIL", "")
	e.waitSampling("suspended", func() bool { return e.deployment().Status.Phase == v4.DeploymentUpdateSuspend })
	d := e.deployment()
	if !strings.Contains(d.Status.Message, "revision 3") || d.Status.Revision != 3 || len(d.Status.History) != 3 {
		t.Errorf("status %+v", d.Status)
	}
	events := eventsEventually(t, "rollout events", v4.EventFilter{Namespace: "ctl", Kind: v4.KindDeployment, Name: "web"},
		func(events []v4.Event) bool { return hasReason(events, "RolloutSuspended") })
	if !hasReason(events, "RolloutSuspended") || !hasReason(events, "RolloutStarted") || !hasReason(events, "RolloutComplete") {
		t.Errorf("events %+v", events)
	}
	time.Sleep(300 * time.Millisecond)
	if n := instancesOf("web-v2"); n < 3 {
		t.Errorf("the suspended rollout went on: web-v2 at %d", n)
	}
	d.Spec.Template = new(d.Status.RevisionOf(2).Template)
	d.Status.Phase, d.Status.LastStep = v4.DeploymentUpdating, time.Now()
	if err := testStore.Update(ctx, d, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	e.waitSampling("back on revision 2", func() bool {
		d := e.deployment()
		op, _ := testStore.Operation(ctx, v4.KindDeployment, "ctl", "web")
		return d.Status.Phase == v4.DeploymentRunning && d.Status.Revision == 2 && d.Status.CurrentAvailable == 4 && instancesOf("web-v3") == -1 && op == nil
	})

	// Without a rollout, a scale sets the current application's count and ends the operation.
	if err := testStore.BeginOperation(ctx, "ctl", "web", v4.Operation{Type: v4.OpScale, Kind: v4.KindDeployment, Name: "ctl/web"}); err != nil {
		t.Fatal(err)
	}
	d = e.deployment()
	d.Spec.Instance = 5
	if err := testStore.Update(ctx, d, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	e.waitSampling("scaled to 5 with the operation ended", func() bool {
		op, _ := testStore.Operation(ctx, v4.KindDeployment, "ctl", "web")
		return instancesOf("web-v2") == 5 && e.deployment().Status.CurrentAvailable == 5 && op == nil
	})

	// Deleting the deployment deletes its applications.
	if _, err := testStore.Delete(ctx, v4.KindDeployment, "ctl", "web", ""); err != nil {
		t.Fatal(err)
	}
	e.eventually("no applications left", func() bool { return instancesOf("web-v2") == -1 })
}

// rollingManually pauses after each step; resuming (status.paused false) takes the next.
func TestDeploymentRollingManuallyPauses(t *testing.T) {
	e := newDeployEnv(t)
	ctx := context.Background()
	e.applyDeployment("one", "")
	e.waitSampling("revision 1 running", func() bool { return e.deployment().Status.Phase == v4.DeploymentRunning })
	e.applyDeployment("two", `,"rollingManually":true`)
	e.waitSampling("paused after the first step", func() bool {
		d := e.deployment()
		return d.Status.Paused && d.Status.Phase == v4.DeploymentUpdatePaused
	})
	time.Sleep(300 * time.Millisecond)
	first := instancesOf("web-v2")
	if d := e.deployment(); first < 1 || first == 4 || d.Status.Old == 0 {
		t.Fatalf("after one step: web-v2 %d, status %+v", first, d.Status)
	}
	for range 10 { // resume until done; each resume is one more step
		d := e.deployment()
		if d.Status.Phase == v4.DeploymentRunning {
			break
		}
		if d.Status.Paused {
			d.Status.Paused = false
			if err := testStore.Update(ctx, d, store.Raw{}); err != nil && !errors.Is(err, store.ErrConflict) {
				t.Fatal(err)
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	e.waitSampling("revision 2 running", func() bool {
		d := e.deployment()
		return d.Status.Phase == v4.DeploymentRunning && d.Status.Revision == 2 && instancesOf("web-v1") == -1
	})
}

// A rollout survives a change of leader: the new controller knows only what is stored.
func TestDeploymentRolloutResumesUnderANewController(t *testing.T) {
	e := newDeployEnv(t)
	e.applyDeployment("one", "")
	e.waitSampling("revision 1 running", func() bool {
		return e.deployment().Status.Phase == v4.DeploymentRunning && e.deployment().Status.Available == 4
	})
	e.resetMin()
	// Steps 5 s apart: the state looked for lasts a step, and a sampler starved by a busy
	// machine (the whole suite under -race, with builds beside it) missed 1 s steps, and
	// once 3 s ones.
	e.applyDeployment("two", `,"upgradeDuration":5`)
	e.waitSampling("the rollout under way", func() bool { return instancesOf("web-v2") >= 1 && instancesOf("web-v1") >= 3 })
	e.stop()
	e.startController()
	e.waitSampling("revision 2 running", func() bool {
		d := e.deployment()
		return d.Status.Phase == v4.DeploymentRunning && d.Status.Revision == 2 && instancesOf("web-v1") == -1 && instancesOf("web-v2") == 4
	})
	if e.minSeen < 3 {
		t.Errorf("only %d instances available at one point", e.minSeen)
	}
}

func hasReason(events []v4.Event, reason string) bool {
	for _, ev := range events {
		if ev.Reason == reason {
			return true
		}
	}
	return false
}

// An application that is not the deployment's holds the name of its first revision: the
// deployment says so and leaves it alone.
func TestDeploymentNameTaken(t *testing.T) {
	e := newDeployEnv(t)
	e.apply("web-v1", 1, `{"policy":"Never"}`)
	e.applyDeployment("one", "")
	e.eventually("the status names the problem", func() bool {
		return strings.Contains(e.deployment().Status.Message, "cannot create web-v1")
	})
	o, err := testStore.Get(context.Background(), v4.KindProcess, "ctl", "web-v1")
	if err != nil || o.GetMeta().Annotations[v4.ControlledByAnnotation] != "" || o.(*v4.Process).Spec.Instance != 1 {
		t.Errorf("the user's web-v1 was changed: %+v (%v)", o, err)
	}
}

// A child the controller deletes is gone from its next read of the children, however late
// the cache's watch delivers the delete: a pass that still found the old revision took
// the rollout for unfinished and locked the deployment again.
func TestDeploymentDeletedChildIsNotReadAgain(t *testing.T) {
	e := newTestEnv(t)
	c := NewDeploymentController(testStore, e.opts())
	key := scheduler.AppKey{Kind: v4.KindDeployment, Namespace: "ctl", Name: "api"}
	ctx := context.Background()
	for i := range 20 {
		name := fmt.Sprintf("api-v%d", i)
		e.apply(name, 1, `{"policy":"Never"}`)
		p, err := store.Typed[*v4.Process](testStore, v4.KindProcess).Get(ctx, "ctl", name)
		if err != nil {
			t.Fatal(err)
		}
		p.Metadata.Annotations = map[string]string{v4.ControlledByAnnotation: "deployment/api"}
		if err := testStore.Update(ctx, p, store.Raw{}); err != nil {
			t.Fatal(err)
		}
		var kids []*child
		e.eventually("the child is read", func() bool {
			kids, err = c.children(ctx, key)
			return err == nil && len(kids) == 1
		})
		if err := c.deleteChild(ctx, kids[0]); err != nil {
			t.Fatal(err)
		}
		if kids, err = c.children(ctx, key); err != nil || len(kids) != 0 {
			t.Fatalf("round %d: %d children read after the delete (%v)", i, len(kids), err)
		}
	}
}
