package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// sleeper is a process of instances that sleep, each with a cpu limit, a priority class
// and a disruption budget ("" for none).
func sleeper(ns, name string, instances int, cpu float64, class, budget string) string {
	sched := ""
	if class != "" {
		sched += fmt.Sprintf(`"priorityClassName":%q,`, class)
	}
	if budget != "" {
		sched += `"disruptionBudget":` + budget + ","
	}
	return fmtSpec(`{"apiVersion":"v4","kind":"process","metadata":{"name":%q,"namespace":%q},
		"restartPolicy":{"policy":"Always"},"killPolicy":{"gracePeriod":1},
		"spec":{%s"instance":%d,"template":{"spec":{"processes":[{"procName":"sleep","startGracePeriod":1,
			"startCmd":"exec sleep 3600","resources":{"limits":{"cpu":"%.3f","memory":"16"}}}]}}}}`,
		name, ns, sched, instances, cpu)
}

// Priorities and preemption on one full node (docs/policy.md, "Priorities and
// preemption"): two low-priority processes fill it, one of them protected by a
// disruption budget of 0; a high-priority process that does not fit preempts two
// instances of the unprotected one, never the protected one, and runs where they ran.
func TestPreemption(t *testing.T) {
	requireRoot(t)
	s := startServer(t, t.TempDir())
	startAgent(t, s, "preempt-1", "31800-31849")
	const ns = "preempte2e"
	s.cleanupProcesses(ns)
	api := s.apiClient(t)
	ctx := context.Background()

	var node v4.Node
	if err := json.Unmarshal([]byte(s.mustBerth("get", "node", "preempt-1", "-o", "json")), &node); err != nil {
		t.Fatal(err)
	}
	// Four instances fill the node; one of 1.5 times their size needs two of them gone.
	per := math.Floor((node.Spec.Allocatable.CPU/4-0.011)*1000) / 1000
	if per < 0.05 {
		t.Skipf("node has %.2f cpu: too little to fill", node.Spec.Allocatable.CPU)
	}

	t.Run("classes", func(t *testing.T) {
		for _, pc := range []*v4.PriorityClass{
			{Metadata: v4.ObjectMeta{Name: "e2e-high"}, Value: 1000, Description: "preempts"},
			{Metadata: v4.ObjectMeta{Name: "e2e-low"}, Value: -10, PreemptionPolicy: v4.PreemptNever},
		} {
			if _, err := api.PutPriorityClass(ctx, pc); err != nil {
				t.Fatal(err)
			}
		}
		out := s.mustBerth("get", "priorityclasses")
		for _, want := range []string{"NAME", "VALUE", "PREEMPTION-POLICY", "e2e-high", "1000", "e2e-low", "Never"} {
			if !strings.Contains(out, want) {
				t.Fatalf("get priorityclasses lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("preempts the unprotected", func(t *testing.T) {
		s.applySpec(t, sleeper(ns, "kept", 2, per, "e2e-low", `{"maxUnavailable":0}`))
		s.applySpec(t, sleeper(ns, "spare", 2, per, "e2e-low", ""))
		kept := s.running(t, ns, "kept", 2)
		spare := s.running(t, ns, "spare", 2)

		urgent := sleeper(ns, "urgent", 1, 1.5*per, "e2e-high", "")
		plan := s.berth(urgent, "plan", "-f", "-")
		if !strings.Contains(plan.stdout, "preempts") || !strings.Contains(plan.stdout, ns+"/spare") || strings.Contains(plan.stdout, ns+"/kept") {
			t.Errorf("plan does not show the preemption of spare alone:\n%s%s", plan.stdout, plan.stderr)
		}
		start := time.Now()
		s.applySpec(t, urgent)
		got := s.running(t, ns, "urgent", 1)[0]
		t.Logf("urgent Running %v after the apply", time.Since(start).Round(time.Millisecond))
		if got.Spec.Node != "preempt-1" || got.Spec.Priority != 1000 {
			t.Errorf("urgent: node %s, priority %d", got.Spec.Node, got.Spec.Priority)
		}
		// The protected process runs on untouched; the unprotected one's instances wait.
		now := s.taskGroups(ns, "kept")
		for i, tg := range now {
			if tg.Metadata.Name != kept[i].Metadata.Name || tg.Status.Phase != v4.StatusRunning {
				t.Errorf("kept instance %d: %s %s (was %s)", tg.Spec.Index, tg.Metadata.Name, tg.Status.Phase, kept[i].Metadata.Name)
			}
		}
		// The victims stopped before urgent could start; their finished runs go at the
		// controller's next pass.
		waitUntil(t, 30*time.Second, "spare's preempted runs to go", func() bool {
			for _, tg := range s.taskGroups(ns, "spare") {
				for _, old := range spare {
					if tg.Metadata.Name == old.Metadata.Name {
						if tg.Status.Phase == v4.StatusRunning {
							t.Fatalf("spare instance %d: its preempted run %s runs beside urgent", tg.Spec.Index, tg.Metadata.Name)
						}
						return false
					}
				}
			}
			return true
		})
		waitUntil(t, 30*time.Second, "spare waits for room", func() bool {
			st := s.processStatus(ns, "spare")
			return st.Running == 0 && st.Pending != nil
		})
		s.eventsSay("is stopped for process "+ns+"/urgent", "-n", ns)
	})
}
