package executor

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// initBridgePod is bridgePod with an init container listed first: the network must
// outlive it, so a holder owns it.
func initBridgePod(name string) *v4.TaskGroup {
	tg := bridgePod(name)
	spec := &tg.Spec.Template.Spec
	spec.Containers = append([]v4.Container{{Name: "migrate", Image: "busybox", Lifecycle: &v4.Lifecycle{Init: true}}}, spec.Containers...)
	return tg
}

func TestNetworkHolderOwnsTheNetworkOfAPodThatStartsWithAnInitTask(t *testing.T) {
	h, d := newDockerHarness(t)
	h.run(initBridgePod("web"))
	holder := id("web", v4.NetworkHolderTask)
	waitStarted(t, d, id("web", "migrate"))
	d.Exit(id("web", "migrate"), 0)
	st := h.rec.waitPhase(t, "web", v4.StatusRunning)

	ht, ok := d.Task(holder)
	if !ok || ht.Setup.NetworkMode != "BRIDGE" || len(ht.Setup.PortBindings) != 2 || ht.Setup.Hostname != "" || ht.Container.Image != "fake/pod-sandbox:1" {
		t.Fatalf("holder %+v (found %v)", ht.Setup, ok)
	}
	if ht.Labels[driver.LabelTask] != v4.NetworkHolderTask || ht.Labels[driver.LabelTaskGroup] != testNS+"/web" {
		t.Errorf("holder labels %v", ht.Labels)
	}
	if got := shortNames("web", d.Started()); !slices.Equal(got, []string{v4.NetworkHolderTask, "migrate", "web", "side"}) {
		t.Errorf("start order %v", got)
	}
	for _, n := range []string{"migrate", "web", "side"} {
		tk, _ := d.Task(id("web", n))
		if tk.Setup.JoinTask != holder || tk.Setup.NetworkMode != "" || len(tk.Setup.PortBindings) != 0 {
			t.Errorf("%s: join %q mode %q bindings %v", n, tk.Setup.JoinTask, tk.Setup.NetworkMode, tk.Setup.PortBindings)
		}
	}
	if ip := st.Tasks[1].Info.IPAddress; ip == "" || ip != st.Tasks[2].Info.IPAddress {
		t.Errorf("the pod's IP is the holder's: web %q side %q", ip, st.Tasks[2].Info.IPAddress)
	}
	if len(st.Tasks) != 3 {
		t.Errorf("the holder is no task of the pod's status: %+v", st.Tasks)
	}

	h.e.Kill(testNS, "web")
	if got := shortNames("web", d.Stops()); got[len(got)-1] != v4.NetworkHolderTask {
		t.Errorf("stops %v: the holder goes last", got)
	}
	if err := h.e.Remove(context.Background(), testNS, "web"); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Task(holder); ok {
		t.Error("the holder outlived the pod's removal")
	}
}

// A sidecar with a check passes it before the tasks after it start.
func TestSidecarIsReadyBeforeTheMainTasksStart(t *testing.T) {
	h := newHarness(t)
	tg := processTG("p",
		v4.ProcessTask{ProcName: "web", StartCmd: "./web"},
		v4.ProcessTask{ProcName: "proxy", StartCmd: "./proxy", Lifecycle: &v4.Lifecycle{Sidecar: true},
			HealthChecks: []v4.HealthCheck{{Type: v4.CheckCommand, Command: &v4.CommandCheck{Value: "./ready"}, IntervalSeconds: 2, ConsecutiveFailures: 10}}})
	var probes atomic.Int32
	h.proc.SetExec(id("p", "proxy"), func(ctx context.Context, cmd string) (driver.ExecResult, error) {
		if probes.Add(1) < 4 {
			if slices.Contains(h.proc.Started(), id("p", "web")) {
				t.Error("web started before its sidecar was ready")
			}
			return driver.ExecResult{ExitCode: 1}, nil
		}
		return driver.ExecResult{}, nil
	})
	h.run(tg)
	st := h.rec.waitPhase(t, "p", v4.StatusRunning)
	if probes.Load() < 4 || st.Tasks[1].Healthy == nil || !*st.Tasks[1].Healthy {
		t.Errorf("probes %d, sidecar health %v", probes.Load(), st.Tasks[1].Healthy)
	}

	// One that never passes fails the pod, and the main task never starts.
	never := processTG("never", tg.Spec.Template.Spec.Processes...)
	never.Spec.Template.Spec.Processes[1].HealthChecks[0].ConsecutiveFailures = 2
	h.proc.SetExec(id("never", "proxy"), func(context.Context, string) (driver.ExecResult, error) {
		return driver.ExecResult{ExitCode: 1, Output: []byte("refused")}, nil
	})
	h.run(never)
	st = h.rec.waitPhase(t, "never", v4.StatusFailed)
	if slices.Contains(h.proc.Started(), id("never", "web")) || st.Message == "" {
		t.Errorf("message %q, started %v", st.Message, h.proc.Started())
	}
}

// An agent that restarts adopts a pod whose init tasks ended: they stay Finish, and the
// pod runs on.
func TestAdoptAPodWhoseInitTasksEnded(t *testing.T) {
	h, d := newDockerHarness(t)
	tg := initBridgePod("web")
	p := h.e.newPod(tg)
	var states []driver.State
	for _, tp := range p.plan.tasks {
		st := d.Add(driver.Task{ID: tp.id, Name: tp.name, Labels: tp.labels})
		if tp.role() == v4.RoleInit {
			d.Exit(tp.id, 0)
			st, _ = d.Inspect(context.Background(), tp.id)
		}
		states = append(states, st)
	}
	hs := d.Add(driver.Task{ID: p.plan.holder.id, Name: v4.NetworkHolderTask, Labels: p.plan.holder.labels})
	hs.Info.IPAddress = "172.17.0.9"
	states = append(states, hs)
	if !h.e.Adopt(context.Background(), tg, states) {
		t.Fatal("not adopted")
	}
	st := h.rec.waitPhase(t, "web", v4.StatusRunning)
	if st.Tasks[0].Status != v4.StatusFinish || st.Tasks[1].Info.IPAddress != "172.17.0.9" {
		t.Errorf("init %s, web IP %q", st.Tasks[0].Status, st.Tasks[1].Info.IPAddress)
	}
	h.e.Kill(testNS, "web")
	if got := shortNames("web", d.Stops()); len(got) == 0 || got[len(got)-1] != v4.NetworkHolderTask || slices.Contains(got, "migrate") {
		t.Errorf("stops %v", got)
	}
}

// In HOST mode a pod that starts with an init task needs no holder: every task takes
// the host's network itself.
func TestHostModePodWithInitTasksHasNoHolder(t *testing.T) {
	h, d := newDockerHarness(t)
	tg := containerTG("host", "web", "side")
	tg.Spec.Template.Spec.Containers = append([]v4.Container{{Name: "migrate", Image: "busybox", Lifecycle: &v4.Lifecycle{Init: true}}},
		tg.Spec.Template.Spec.Containers...)
	h.run(tg)
	waitStarted(t, d, id("host", "migrate"))
	d.Exit(id("host", "migrate"), 0)
	st := h.rec.waitPhase(t, "host", v4.StatusRunning)
	if _, ok := d.Task(id("host", v4.NetworkHolderTask)); ok {
		t.Error("a holder for a HOST pod")
	}
	for _, n := range []string{"migrate", "web", "side"} {
		tk, _ := d.Task(id("host", n))
		if tk.Setup.NetworkMode != "HOST" || tk.Setup.JoinTask != "" {
			t.Errorf("%s: mode %q join %q", n, tk.Setup.NetworkMode, tk.Setup.JoinTask)
		}
	}
	if ip := st.Tasks[1].Info.IPAddress; ip != testHostIP {
		t.Errorf("web's IP %q, want the node's", ip)
	}
}
