package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store/storetest"
)

func TestJudgeEmpty(t *testing.T) {
	now := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	svc := &v4.Service{Metadata: v4.ObjectMeta{Name: "web", Namespace: "demo", CreationTimestamp: now.Add(-time.Hour)},
		Spec: v4.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []v4.ServicePort{{Name: "http", Protocol: "http", ServicePort: 80}}}}
	fresh := func(c *v4.Service) *v4.Service {
		cp := *c
		cp.Metadata.CreationTimestamp = now.Add(-10 * time.Second)
		return &cp
	}
	// tg is an instance created age ago, in phase (Running: ready).
	tg := func(i int, age time.Duration, phase string, change func(*v4.TaskGroup)) *v4.TaskGroup {
		return svcTG(i, func(tg *v4.TaskGroup) {
			tg.Metadata.CreationTimestamp = now.Add(-age)
			tg.Status.Phase = phase
			if change != nil {
				change(tg)
			}
		})
	}
	checks := func(delay, grace int) func(*v4.TaskGroup) {
		return func(tg *v4.TaskGroup) {
			tg.Spec.Template.Spec.Containers[0].HealthChecks = []v4.HealthCheck{{Type: v4.CheckTCP, DelaySeconds: delay, GracePeriodSeconds: grace}}
		}
	}
	g := graceTiming{start: time.Minute, unit: time.Second}
	for _, tc := range []struct {
		name string
		svc  *v4.Service
		tgs  []*v4.TaskGroup
		g    graceTiming
		warn bool
		wait time.Duration
		msg  string
	}{
		{name: "a ready instance", tgs: []*v4.TaskGroup{tg(0, time.Hour, v4.StatusRunning, nil), tg(1, time.Hour, v4.StatusFailed, nil)}},
		{name: "nothing selected by a new service: its workload may come", svc: fresh(svc), wait: 50 * time.Second},
		{name: "nothing selected by an old service", warn: true, msg: "the selector app=web matches no instance in namespace demo"},
		{name: "applied together: the instance starts", svc: fresh(svc), tgs: []*v4.TaskGroup{tg(0, 10*time.Second, v4.StatusStaging, nil)}, wait: 50 * time.Second},
		{name: "its grace is over", tgs: []*v4.TaskGroup{tg(0, 2*time.Minute, v4.StatusStaging, nil)}, warn: true,
			msg: "the one instance the selector app=web matches is not ready (instance 0 of application web: Staging)"},
		{name: "health checks give their delay and grace period", tgs: []*v4.TaskGroup{tg(0, 2*time.Minute, v4.StatusRunning, checks(10, 300))}, wait: 190 * time.Second},
		{name: "in the checks' time unit", tgs: []*v4.TaskGroup{tg(0, 2*time.Minute, v4.StatusRunning, checks(10, 300))}, g: graceTiming{start: time.Minute, unit: time.Second / 2}, wait: 35 * time.Second},
		{name: "a process's startGracePeriod", tgs: []*v4.TaskGroup{tg(0, time.Minute, v4.StatusStarting, func(tg *v4.TaskGroup) {
			tg.Spec.Template.Spec = v4.PodSpec{NetworkMode: "HOST", Processes: []v4.ProcessTask{{ProcName: "web", StartGracePeriod: 90}}}
		})}, wait: 30 * time.Second},
		{name: "a replacement has no grace", tgs: []*v4.TaskGroup{tg(0, time.Second, v4.StatusStaging, func(tg *v4.TaskGroup) { tg.Spec.ReschedTimes = 1 })}, warn: true},
		{name: "stopping instances (a scale to zero) have none", tgs: []*v4.TaskGroup{
			tg(0, time.Second, v4.StatusRunning, func(tg *v4.TaskGroup) { tg.Spec.Desired = v4.DesiredStopped }),
			tg(1, time.Second, v4.StatusRunning, func(tg *v4.TaskGroup) { tg.Spec.Desired = v4.DesiredStopped })},
			warn: true, msg: "none of the 2 instances the selector app=web matches is ready (instance 0 of application web: stopping)"},
		{name: "the first grace to end decides", tgs: []*v4.TaskGroup{tg(0, 50*time.Second, v4.StatusStaging, nil), tg(1, 20*time.Second, v4.StatusStaging, nil)}, wait: 10 * time.Second},
		{name: "ended instances are not waited for", svc: fresh(svc), tgs: []*v4.TaskGroup{tg(0, time.Second, v4.StatusFailed, nil)}, wait: 50 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, gt := svc, g
			if tc.svc != nil {
				s = tc.svc
			}
			if tc.g.start > 0 {
				gt = tc.g
			}
			v := judgeEmpty(s, endpointsFor(s, tc.tgs), tc.tgs, gt, now)
			if v.warn != tc.warn || v.wait != tc.wait || !strings.Contains(v.msg, tc.msg) {
				t.Errorf("warn %v wait %v %q, want warn %v wait %v %q", v.warn, v.wait, v.msg, tc.warn, tc.wait, tc.msg)
			}
		})
	}
}

// A service applied with its workload warns nothing while the instances start (a long
// grace here), and nothing once they are ready.
func TestNoEndpointsWaitsForTheStartGrace(t *testing.T) {
	e := startEnv(t, func(e *env) runner {
		opts := e.opts()
		opts.StartGrace = time.Hour
		return NewServiceController(testStore, opts)
	})
	applyService(t, `{"app":"web"}`)
	// The service's first pass finds no instance yet: its workload is still being placed.
	e.eventually("empty endpoints", func() bool { ep := getEndpoints(t); return ep != nil && len(ep.Endpoints)+len(ep.NotReady) == 0 })
	putTG(t, svcTG(0, func(tg *v4.TaskGroup) { tg.Status.Phase = v4.StatusStaging }))
	e.eventually("the starting instance not ready", func() bool {
		ep := getEndpoints(t)
		return ep != nil && len(ep.NotReady) == 1 && len(ep.Endpoints) == 0
	})
	putTG(t, svcTG(0, nil))
	e.eventually("the instance ready", func() bool { ep := getEndpoints(t); return ep != nil && len(ep.Endpoints) == 1 })
	// Each pass queued its events before it wrote the endpoints: they are all there.
	storetest.FlushEvents(t, testStore)
	evs, err := testStore.ListEvents(context.Background(), v4.EventFilter{Kind: v4.KindService, Namespace: "demo", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if hasReason(evs, "NoEndpoints") {
		t.Fatalf("a NoEndpoints warning within the start grace: %+v", evs)
	}
}

// Past the grace, a service whose instances are not ready warns, once while it lasts,
// and again after it had ready instances and lost them.
func TestNoEndpointsAfterTheStartGrace(t *testing.T) {
	e := startEnv(t, func(e *env) runner {
		opts := e.opts()
		opts.StartGrace = 50 * time.Millisecond
		return NewServiceController(testStore, opts)
	})
	filter := v4.EventFilter{Kind: v4.KindService, Namespace: "demo", Name: "web"}
	count := func(evs []v4.Event) int {
		n := 0
		for _, ev := range evs {
			if ev.Reason == "NoEndpoints" && ev.Type == v4.EventWarning && strings.Contains(ev.Message, "is not ready (instance 0 of application web: Staging)") {
				n += max(ev.Count, 1) // the store folds repeats of one event into its count
			}
		}
		return n
	}
	// Ready first: whatever the service's first pass saw, ready instances end that.
	putTG(t, svcTG(0, nil))
	applyService(t, `{"app":"web"}`)
	for want := 1; want <= 2; want++ {
		e.eventually("the instance ready", func() bool { ep := getEndpoints(t); return ep != nil && len(ep.Endpoints) == 1 })
		// Its grace (from its creation) is long over: not ready again warns at once.
		putTG(t, svcTG(0, func(tg *v4.TaskGroup) { tg.Status.Phase = v4.StatusStaging }))
		if evs := eventsEventually(t, "a NoEndpoints warning", filter, func(evs []v4.Event) bool { return count(evs) >= want }); count(evs) != want {
			t.Fatalf("want %d NoEndpoints warnings of the instance: %+v", want, evs)
		}
		putTG(t, svcTG(0, nil))
	}
}
