package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/scheduler/feed"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache/cachetest"
	"github.com/berthhq/berth/internal/store/storetest"
)

func createNode(t *testing.T, name string, opts ...func(*v4.Node)) {
	t.Helper()
	storetest.CreateNode(t, testStore, name, v4.NodeResources{CPU: 8, MemoryMB: 16384, DiskMB: 100000}, opts...)
}

func createTaskGroup(t *testing.T, ns, app string, index int, node, phase string) {
	t.Helper()
	tg := &v4.TaskGroup{
		TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindTaskGroup},
		Metadata: v4.ObjectMeta{Name: fmt.Sprintf("%d.%s.%s.berth.1700000000000000000", index, app, ns), Namespace: ns},
		Spec: v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindProcess, Name: app}, Index: index, Node: node,
			Resources: v4.NodeResources{CPU: 0.5, MemoryMB: 128}},
		Status: v4.TaskGroupStatus{Phase: phase},
	}
	if err := testStore.Create(context.Background(), tg, store.Raw{}); err != nil {
		t.Fatal(err)
	}
}

func postPlan(t *testing.T, url, body string) v4.PlanResult {
	t.Helper()
	r := call(t, http.MethodPost, url+"/v1/plan", body)
	wantStatus(t, r, http.StatusOK)
	var res v4.PlanResult
	if err := json.Unmarshal(r.body, &res); err != nil {
		t.Fatalf("decode plan %s: %v", r.body, err)
	}
	return res
}

// planUntil repeats a plan until check accepts it: the feed sees store writes
// asynchronously.
func planUntil(t *testing.T, url, body string, check func(v4.PlanResult) bool) v4.PlanResult {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := postPlan(t, url, body)
		if check(res) || time.Now().After(deadline) {
			return res
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func daemonsetJSON(ns, name string) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"daemonset","metadata":{"name":%q,"namespace":%q},"spec":{"template":{"spec":{"processes":[{"procName":"agent","startCmd":"./agent"}]}}}}`,
		name, ns)
}

// The response shape, the skip list and the indexes computed from existing task groups.
func TestPlan(t *testing.T) {
	url := newTestServer(t, Config{})
	createNode(t, "node-1")
	createNode(t, "node-2")
	createNode(t, "node-3")
	createTaskGroup(t, "plan", "web", 0, "node-1", v4.StatusRunning)
	createTaskGroup(t, "plan", "web", 2, "node-2", v4.StatusRunning)
	createTaskGroup(t, "plan", "web", 3, "node-2", v4.StatusFailed) // does not count

	body := procJSON("plan", "web", 4) + "\n" + cmJSON("plan", "cfg", "eA==") + "\n" +
		procJSON("plan", "api", 2) + "\n" + daemonsetJSON("plan", "agent")
	res := planUntil(t, url, body, func(r v4.PlanResult) bool {
		return len(r.Results) > 0 && fmt.Sprint(r.Results[0].Existing) == "[0 2]" && len(r.Results) == 3 &&
			len(r.Results[2].Placements)+len(r.Results[2].Unplaced) == 3
	})
	if len(res.Results) != 3 {
		t.Fatalf("results: %+v", res)
	}
	if len(res.Skipped) != 1 || res.Skipped[0] != (v4.PlanSkip{Kind: v4.KindConfigMap, Namespace: "plan", Name: "cfg", Reason: "configmap objects are not placed"}) {
		t.Fatalf("skipped: %+v", res.Skipped)
	}
	for i, want := range []struct {
		kind     v4.Kind
		name     string
		existing string
		planned  string // placed and unplaced indexes together
	}{
		{v4.KindProcess, "web", "[0 2]", "[1 3]"},
		{v4.KindProcess, "api", "[]", "[0 1]"},
		{v4.KindDaemonset, "agent", "[]", "[0 1 2]"}, // one per node
	} {
		got := res.Results[i]
		if got.Kind != want.kind || got.Namespace != "plan" || got.Name != want.name || fmt.Sprint(got.Existing) != want.existing {
			t.Errorf("result %d: %+v", i, got)
		}
		var planned []int
		for _, p := range got.Placements {
			planned = append(planned, p.Index)
			if p.Node == "" || p.Ports == nil {
				t.Errorf("result %d: placement %+v", i, p)
			}
		}
		planned = append(planned, got.Unplaced...)
		if s := fmt.Sprint(sortedInts(planned)); s != want.planned {
			t.Errorf("result %d (%s): planned %s, want %s", i, want.name, s, want.planned)
		}
		if len(got.Unplaced) > 0 {
			t.Errorf("result %d: unplaced on empty ready nodes: %+v", i, got)
		}
	}

	// Every field of the documented shape is present, arrays never null.
	r := call(t, http.MethodPost, url+"/v1/plan", procJSON("plan", "api", 1))
	wantStatus(t, r, http.StatusOK)
	var raw map[string]any
	if err := json.Unmarshal(r.body, &raw); err != nil {
		t.Fatal(err)
	}
	obj := raw["results"].([]any)[0].(map[string]any)
	for _, k := range []string{"kind", "namespace", "name", "existing", "placements", "unplaced"} {
		if obj[k] == nil {
			t.Errorf("result lacks %q: %s", k, r.body)
		}
	}
	if raw["skipped"] == nil {
		t.Errorf("no skipped list: %s", r.body)
	}

	// Nothing was written.
	if n, err := testStore.Count(context.Background(), v4.KindTaskGroup); err != nil || n != 3 {
		t.Fatalf("task groups after plan: %d, %v", n, err)
	}
	if n, err := testStore.Count(context.Background(), v4.KindProcess); err != nil || n != 0 {
		t.Fatalf("processes after plan: %d, %v", n, err)
	}
}

func TestPlanBadInput(t *testing.T) {
	url := newTestServer(t, Config{})
	wantStatus(t, call(t, http.MethodPost, url+"/v1/plan", "{"), http.StatusBadRequest)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/plan", procJSON("plan", "web", -1)), http.StatusUnprocessableEntity)
	r := call(t, http.MethodPost, url+"/v1/plan", strings.Replace(procJSON("plan", "web", 1),
		`"namespace":"plan"`, `"namespace":"plan","annotations":{"berth.io/placement":"pack"}`, 1))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	r = call(t, http.MethodGet, url+"/v1/plan", "")
	wantStatus(t, r, http.StatusMethodNotAllowed)
}

// Before the feed's first list a plan waits, then answers 503.
func TestPlanBeforeSync(t *testing.T) {
	newTestServer(t, Config{}) // clean keyspace
	caches := cachetest.Registry(t, testStore, controller.RegisterCaches)
	f := feed.New(caches, quietLogger())
	srv, url := startTestServer(t, Config{Feed: f, Caches: caches}, testStore) // never run: never synced
	srv.planSyncWait = 50 * time.Millisecond
	r := call(t, http.MethodPost, url+"/v1/plan", procJSON("plan", "web", 1))
	wantStatus(t, r, http.StatusServiceUnavailable)
	if !strings.Contains(decodeError(t, r).Message, "not loaded") {
		t.Fatalf("503 message: %s", r.body)
	}
}

func sortedInts(s []int) []int {
	out := slices.Clone(s)
	slices.Sort(out)
	if out == nil {
		return []int{}
	}
	return out
}

func fixedPortProc(name string, instances int) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"process","metadata":{"name":%q,"namespace":"plan"},"spec":{"instance":%d,"template":{"spec":{"processes":[{"procName":"web","startCmd":"./web","ports":[{"name":"http","hostPort":8899}]}]}}}}`,
		name, instances)
}

// Documents of one plan see each other's placements: the first takes port 8899 on both
// nodes, so the second fits nowhere, and says why.
func TestPlanDocumentsShareTheSnapshot(t *testing.T) {
	url := newTestServer(t, Config{})
	createNode(t, "node-1")
	createNode(t, "node-2")
	body := fixedPortProc("first", 2) + "\n" + fixedPortProc("second", 1)
	res := planUntil(t, url, body, func(r v4.PlanResult) bool { return len(r.Results[0].Placements) == 2 })
	first, second := res.Results[0], res.Results[1]
	if len(first.Placements) != 2 || first.Placements[0].Node == first.Placements[1].Node ||
		first.Placements[0].Ports[0].Name != "http" || first.Placements[0].Ports[0].HostPort != 8899 {
		t.Fatalf("first: %+v", first)
	}
	if len(second.Placements) != 0 || fmt.Sprint(second.Unplaced) != "[0]" || second.Reason == nil ||
		second.Reason.Nodes != 2 || !strings.Contains(second.Message, "8899") {
		t.Fatalf("second: %+v", second)
	}
	// Alone, the second one fits: the plan wrote nothing.
	if res := postPlan(t, url, fixedPortProc("second", 1)); len(res.Results[0].Placements) != 1 {
		t.Fatalf("second alone: %+v", res.Results[0])
	}
}

// The cluster-wide placement strategy applies to plans; an annotation overrides it.
func TestPlanPlacementStrategy(t *testing.T) {
	url := newTestServer(t, Config{Placement: "binpack"})
	createNode(t, "node-1")
	createNode(t, "node-2")
	proc := func(annotations string) string {
		return `{"apiVersion":"v4","kind":"process","metadata":{"name":"web","namespace":"plan"` + annotations + `},
			"spec":{"instance":2,"template":{"spec":{"processes":[{"procName":"web","startCmd":"./web"}]}}}}`
	}
	res := planUntil(t, url, proc(""), func(r v4.PlanResult) bool { return len(r.Results[0].Placements) == 2 })
	if p := res.Results[0].Placements; p[0].Node != p[1].Node {
		t.Errorf("binpack cluster: both instances on one node, got %+v", p)
	}
	res = postPlan(t, url, proc(`,"annotations":{"berth.io/placement":"spread"}`))
	if p := res.Results[0].Placements; len(p) != 2 || p[0].Node == p[1].Node {
		t.Errorf("spread annotation: one instance per node, got %+v", p)
	}
}
