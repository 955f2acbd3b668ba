package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// A plan of a high-priority process on a full node says which lower task groups it
// would preempt; the same process at the default priority only fits nowhere.
func TestPlanShowsPreemptions(t *testing.T) {
	url, proc, urgent := fullNodeOfLow(t)
	// The scheduler's snapshot has the full node once the same process at the default
	// priority (equal to the task groups': never a victim) fits nowhere.
	plain := planUntil(t, url, proc, func(r v4.PlanResult) bool { return len(r.Results) == 1 && len(r.Results[0].Unplaced) == 1 })
	res := planUntil(t, url, urgent, func(r v4.PlanResult) bool { return len(r.Results) == 1 && len(r.Results[0].Preemptions) == 1 })
	got := res.Results[0]
	if len(got.Placements) != 1 || got.Placements[0].Node != "node-1" || len(got.Preemptions) != 1 {
		t.Fatalf("plan %+v", got)
	}
	p := got.Preemptions[0]
	if p.Node != "node-1" || len(p.Victims) != 2 || p.Victims[0].Name != "low" || p.Victims[0].Priority != 0 || p.Victims[0].Kind != v4.KindProcess {
		t.Errorf("preemption %+v", p)
	}
	if len(plain.Results) != 1 || len(plain.Results[0].Unplaced) != 1 || len(plain.Results[0].Preemptions) != 0 { // equal priority: never a victim
		t.Errorf("at the default priority: %+v", plain.Results)
	}
	// A tenant of another namespace sees that two task groups would go, not whose.
	tenant := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: other}
rules:
  - {namespaces: [other], kinds: ["*"], verbs: [read, write]}
`, "other", "")
	r := callAs(t, "", http.MethodPost, url+"/v1/plan", strings.Replace(urgent, `"namespace":"plan"`, `"namespace":"other"`, 1), tenant)
	wantStatus(t, r, http.StatusOK)
	var hidden v4.PlanResult
	if err := json.Unmarshal(r.body, &hidden); err != nil {
		t.Fatal(err)
	}
	if len(hidden.Results) != 1 || len(hidden.Results[0].Preemptions) != 1 {
		t.Fatalf("tenant's plan: %s", r.body)
	}
	if p := hidden.Results[0].Preemptions[0]; len(p.Victims) != 0 || p.Hidden != 2 || strings.Contains(string(r.body), "low") {
		t.Errorf("another namespace's victims shown to a tenant: %s", r.body)
	}
	// Nothing was written.
	objs, _, err := testStore.List(context.Background(), v4.KindTaskGroup, "plan")
	if err != nil || len(objs) != 4 {
		t.Fatalf("task groups after plan: %d, %v", len(objs), err)
	}
}

// fullNodeOfLow starts a server with node-1 full of process low's four task groups
// (1.95 cpu each, priority 0), and returns process urgent (3 cpu) at the default
// priority and in class high (1000).
func fullNodeOfLow(t *testing.T) (url, proc, urgent string) {
	t.Helper()
	url = newTestServer(t, Config{})
	createNode(t, "node-1")
	for i := range 4 {
		tg := &v4.TaskGroup{
			TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindTaskGroup},
			Metadata: v4.ObjectMeta{Name: fmt.Sprintf("%d.low.plan.berth.1700000000000000000", i), Namespace: "plan"},
			Spec: v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindProcess, Name: "low"}, Index: i, Node: "node-1",
				Resources: v4.NodeResources{CPU: 1.95, MemoryMB: 128}},
			Status: v4.TaskGroupStatus{Phase: v4.StatusRunning},
		}
		if err := testStore.Create(context.Background(), tg, store.Raw{}); err != nil {
			t.Fatal(err)
		}
	}
	wantStatus(t, call(t, http.MethodPut, url+"/v1/priorityclasses/high", `{"value":1000}`), http.StatusOK)
	proc = strings.Replace(procJSON("plan", "urgent", 1), `"startCmd":"./web"`,
		`"startCmd":"./web","resources":{"requests":{"cpu":"3","memory":"64"}}`, 1)
	urgent = strings.Replace(proc, `"spec":{"instance":1,`, `"spec":{"priorityClassName":"high","instance":1,`, 1)
	return url, proc, urgent
}

// A plan picks the victims the leader's scheduler would, on any server: it honours the
// disruption budget of the victims' workload, which only the leader's controllers put
// into their snapshot. This test's server runs no controllers, as a follower.
func TestPlanHonoursDisruptionBudgets(t *testing.T) {
	for _, tc := range []struct{ maxUnavailable, victims int }{{1, 0}, {2, 2}} {
		t.Run(fmt.Sprintf("maxUnavailable %d", tc.maxUnavailable), func(t *testing.T) {
			url, _, urgent := fullNodeOfLow(t)
			low := strings.Replace(procJSON("plan", "low", 4), `"spec":{`,
				fmt.Sprintf(`"spec":{"disruptionBudget":{"maxUnavailable":%d},`, tc.maxUnavailable), 1)
			wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", low), http.StatusOK)
			res := planUntil(t, url, urgent, func(r v4.PlanResult) bool {
				if len(r.Results) != 1 {
					return false
				}
				if tc.victims == 0 {
					return len(r.Results[0].Preemptions) == 0 && len(r.Results[0].Unplaced) == 1
				}
				return len(r.Results[0].Preemptions) == 1 && len(r.Results[0].Preemptions[0].Victims) == tc.victims
			})
			got := res.Results[0]
			switch {
			case tc.victims == 0 && (len(got.Preemptions) != 0 || len(got.Unplaced) != 1):
				t.Fatalf("a budget of %d: the plan preempts %+v (unplaced %v), want nothing: two of low's would go", tc.maxUnavailable, got.Preemptions, got.Unplaced)
			case tc.victims > 0 && (len(got.Preemptions) != 1 || len(got.Preemptions[0].Victims) != tc.victims):
				t.Fatalf("a budget of %d: the plan preempts %+v, want %d victims", tc.maxUnavailable, got.Preemptions, tc.victims)
			}
		})
	}
}
