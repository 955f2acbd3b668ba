package scheduler

import (
	"fmt"
	"slices"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

var (
	lowApp  = AppKey{Kind: v4.KindApplication, Namespace: "ns-b", Name: "batch"}
	midApp  = AppKey{Kind: v4.KindApplication, Namespace: "ns-b", Name: "mid"}
	highApp = AppKey{Kind: v4.KindApplication, Namespace: "ns-a", Name: "urgent"}
)

// ptg is a running task group of app on node with a priority and cpu (memory 100 MB).
func ptg(app AppKey, index int, node string, prio int32, cpu float64) *v4.TaskGroup {
	t := tg(app, index, node, v4.StatusRunning, nil, nil)
	t.Spec.Priority, t.Spec.Resources = int(prio), v4.NodeResources{CPU: cpu, MemoryMB: 100}
	return t
}

// preemptor asks for one instance of cpu cpu (less the executor's overhead) at prio.
func preemptor(prio int32, cpu float64) *Request {
	r := request(highApp, nil, 1)
	r.Resources, r.Priority = v4.NodeResources{CPU: cpu - DefaultOverhead.CPU, MemoryMB: 100}, prio
	return r
}

func victimNames(p *Preemption) []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, v := range p.Victims {
		out = append(out, fmt.Sprintf("%s:%s#%d", p.Node, v.Owner.Name, v.Index))
	}
	slices.Sort(out)
	return out
}

func TestPreemptVictims(t *testing.T) {
	four := capacity(4, 16000, 100000)
	tests := []struct {
		name    string
		nodes   []*v4.Node
		tgs     []*v4.TaskGroup
		req     *Request
		budgets map[AppKey][2]int // desired, maxUnavailable
		want    []string
	}{
		{name: "fewest victims: one large rather than three small",
			nodes: []*v4.Node{node("a", four), node("b", four)},
			tgs: []*v4.TaskGroup{ptg(lowApp, 0, "a", 0, 1), ptg(lowApp, 1, "a", 0, 1), ptg(lowApp, 2, "a", 0, 1), ptg(lowApp, 3, "a", 0, 0.9),
				ptg(lowApp, 4, "b", 0, 3.9)},
			req: preemptor(10, 3), want: []string{"b:batch#4"}},
		{name: "lowest priority node first",
			nodes: []*v4.Node{node("a", four), node("b", four)},
			tgs:   []*v4.TaskGroup{ptg(midApp, 0, "a", 5, 3.9), ptg(lowApp, 0, "b", 1, 3.9)},
			req:   preemptor(10, 2), want: []string{"b:batch#0"}},
		{name: "lowest priority on the node",
			nodes: []*v4.Node{node("a", four)},
			tgs:   []*v4.TaskGroup{ptg(midApp, 0, "a", 3, 1.95), ptg(lowApp, 0, "a", 1, 1.95)},
			req:   preemptor(10, 1.5), want: []string{"a:batch#0"}},
		{name: "reprieve: the small low one is not needed",
			nodes: []*v4.Node{node("a", four)},
			tgs:   []*v4.TaskGroup{ptg(lowApp, 0, "a", 1, 0.5), ptg(midApp, 0, "a", 2, 3.4)},
			req:   preemptor(10, 3), want: []string{"a:mid#0"}},
		{name: "equal priority is never a victim",
			nodes: []*v4.Node{node("a", four)},
			tgs:   []*v4.TaskGroup{ptg(lowApp, 0, "a", 10, 3.9)},
			req:   preemptor(10, 2)},
		{name: "higher priority is never a victim",
			nodes: []*v4.Node{node("a", four)},
			tgs:   []*v4.TaskGroup{ptg(lowApp, 0, "a", 11, 2), ptg(midApp, 0, "a", 1, 1.9)},
			req:   preemptor(10, 3)},
		{name: "a job's or daemonset's task group is never a victim",
			nodes: []*v4.Node{node("a", four)},
			tgs: []*v4.TaskGroup{ptg(AppKey{Kind: v4.KindJob, Namespace: "ns-b", Name: "j"}, 0, "a", 0, 2),
				ptg(AppKey{Kind: v4.KindDaemonset, Namespace: "ns-b", Name: "d"}, 0, "a", 0, 1.9)},
			req: preemptor(10, 2)},
		{name: "preemptionPolicy Never",
			nodes: []*v4.Node{node("a", four)},
			tgs:   []*v4.TaskGroup{ptg(lowApp, 0, "a", 0, 3.9)},
			req:   func() *Request { r := preemptor(10, 2); r.NoPreempt = true; return r }()},
		{name: "budget of zero protects the owner",
			nodes: []*v4.Node{node("a", four), node("b", four)},
			tgs:   []*v4.TaskGroup{ptg(lowApp, 0, "a", 0, 3.9), ptg(midApp, 0, "b", 5, 3.9)},
			req:   preemptor(10, 2), budgets: map[AppKey][2]int{lowApp: {1, 0}}, want: []string{"b:mid#0"}},
		{name: "budget counts the victims it plans",
			nodes: []*v4.Node{node("a", four)},
			tgs:   []*v4.TaskGroup{ptg(lowApp, 0, "a", 0, 1.95), ptg(lowApp, 1, "a", 0, 1.95)},
			req:   preemptor(10, 3), budgets: map[AppKey][2]int{lowApp: {2, 1}}},
		{name: "budget counts instances already down",
			nodes: []*v4.Node{node("a", four)},
			tgs:   []*v4.TaskGroup{ptg(lowApp, 0, "a", 0, 3.9)},
			req:   preemptor(10, 2), budgets: map[AppKey][2]int{lowApp: {2, 1}}},
		{name: "a victim still stopping counts as down",
			nodes: []*v4.Node{node("a", four)},
			tgs: []*v4.TaskGroup{ptg(lowApp, 0, "a", 0, 1.95),
				func() *v4.TaskGroup { t := ptg(lowApp, 1, "a", 0, 1.95); t.Spec.Desired = v4.DesiredStopped; return t }()},
			req: preemptor(10, 1.5), budgets: map[AppKey][2]int{lowApp: {2, 1}}},
		{name: "budget allows one",
			nodes: []*v4.Node{node("a", four)},
			tgs:   []*v4.TaskGroup{ptg(lowApp, 0, "a", 0, 1.95), ptg(lowApp, 1, "a", 0, 1.95)},
			req:   preemptor(10, 1.5), budgets: map[AppKey][2]int{lowApp: {2, 1}}, want: []string{"a:batch#0"}},
		{name: "a fixed port frees only its holder",
			nodes: []*v4.Node{node("a", four)},
			tgs: []*v4.TaskGroup{ptg(lowApp, 0, "a", 0, 0.5),
				func() *v4.TaskGroup {
					t := ptg(midApp, 0, "a", 1, 0.5)
					t.Spec.Ports = []v4.AllocatedPort{{HostPort: 8080}}
					return t
				}()},
			req: func() *Request {
				r := preemptor(10, 1)
				r.FixedPorts = []v4.AllocatedPort{{Name: "http", HostPort: 8080}}
				return r
			}(), want: []string{"a:mid#0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshotOf(tc.nodes, tc.tgs...)
			for app, b := range tc.budgets {
				s.SetDisruptionBudget(app, b[0], b[1])
			}
			before := s.Clone()
			got := victimNames(s.Preempt(tc.req, Options{}))
			if !slices.Equal(got, tc.want) {
				t.Errorf("victims = %v, want %v", got, tc.want)
			}
			assertSameUse(t, s, before)
		})
	}
}

// assertSameUse checks that Preempt left every node's accounting as it was.
func assertSameUse(t *testing.T, s, before *Snapshot) {
	t.Helper()
	for name, n := range s.byName {
		b := before.byName[name]
		if n.usedCPU-b.usedCPU > epsilon || b.usedCPU-n.usedCPU > epsilon || n.holding != b.holding || len(n.placed) != len(b.placed) ||
			len(n.ports) != len(b.ports) || !slices.Equal(n.gpuUsed, b.gpuUsed) {
			t.Errorf("node %s changed: cpu %v -> %v, holding %d -> %d", name, b.usedCPU, n.usedCPU, b.holding, n.holding)
		}
	}
	if len(s.apps) != len(before.apps) {
		t.Errorf("apps %d -> %d", len(before.apps), len(s.apps))
	}
}

func TestPreemptGPUs(t *testing.T) {
	a := node("a", gpus(2, 40000, nil))
	held := func(app AppKey, i int, prio int32, g v4.TaskGPU) *v4.TaskGroup {
		t := ptg(app, i, "a", prio, 0.5)
		t.Spec.GPUs = []v4.TaskGPU{g}
		return t
	}
	t.Run("a whole card", func(t *testing.T) {
		s := snapshotOf([]*v4.Node{a}, held(lowApp, 0, 1, whole("a", 0, 40000)), held(midApp, 0, 2, whole("a", 1, 40000)))
		req := gpuRequest(1, v4.GPURequest{Cards: 1})
		req.App, req.Priority = highApp, 10
		p := s.Preempt(req, Options{})
		if got := victimNames(p); !slices.Equal(got, []string{"a:batch#0"}) {
			t.Fatalf("victims = %v", got)
		}
		if len(p.GPUs) != 1 || p.GPUs[0].Index != 0 {
			t.Fatalf("cards %+v, want card 0", p.GPUs)
		}
		// The hold keeps the card: a lower GPU request does not take it once the victim is gone.
		s.NominateCards(req, 0, p.Node, p.GPUs, Options{})
		s.RemoveTaskGroup(p.Victims[0].Namespace, p.Victims[0].Name)
		low := gpuRequest(1, v4.GPURequest{Cards: 1})
		low.App = lowApp
		if res := s.Place(low, Options{}); len(res.Placements) != 0 {
			t.Errorf("a lower request took the held card: %v", placedCards(res))
		}
		if res := s.PlaceNominated(req, "a", Options{}); len(res.Placements) != 1 || res.Placements[0].GPUs[0].Index != 0 {
			t.Errorf("the preemptor placed %v", placedCards(res))
		}
	})
	t.Run("shares of one card", func(t *testing.T) {
		s := snapshotOf([]*v4.Node{a}, held(lowApp, 0, 1, share("a", 0, 50, 20000)), held(lowApp, 1, 1, share("a", 0, 50, 20000)),
			held(midApp, 0, 5, whole("a", 1, 40000)))
		req := gpuRequest(1, v4.GPURequest{Cores: 40, MemoryMiB: 10240})
		req.App, req.Priority = highApp, 10
		got := victimNames(s.Preempt(req, Options{}))
		if len(got) != 1 || got[0][:8] != "a:batch#" {
			t.Errorf("victims = %v, want one share of batch", got)
		}
	})
	t.Run("a card held at higher priority", func(t *testing.T) {
		s := snapshotOf([]*v4.Node{a}, held(midApp, 0, 20, whole("a", 0, 40000)), held(midApp, 1, 20, whole("a", 1, 40000)))
		req := gpuRequest(1, v4.GPURequest{Cards: 1})
		req.App, req.Priority = highApp, 10
		if p := s.Preempt(req, Options{}); p != nil {
			t.Errorf("preempted %v", victimNames(p))
		}
	})
}

func TestNominationHoldsTheNode(t *testing.T) {
	s := snapshotOf([]*v4.Node{node("a", capacity(4, 16000, 100000))}, ptg(lowApp, 0, "a", 0, 3.9))
	req := preemptor(10, 3)
	p := s.Preempt(req, Options{})
	if p == nil || p.Node != "a" {
		t.Fatalf("preemption = %+v", p)
	}
	s.Nominate(req, 0, p.Node, Options{})
	if got := s.Nominated(highApp, 0); got != "a" {
		t.Fatalf("nominated = %q", got)
	}
	// Still stopping: the preemptor waits and keeps its hold.
	if res := s.PlaceNominated(req, "a", Options{}); len(res.Placements) != 0 || s.Nominated(highApp, 0) != "a" {
		t.Fatalf("placed before its victim stopped: %+v", res)
	}
	s.RemoveTaskGroup(p.Victims[0].Namespace, p.Victims[0].Name)
	// The victim's replacement (lower priority) cannot take the room back.
	low := request(lowApp, nil, 1)
	low.Resources.CPU = 2
	if res := s.Place(low, Options{}); len(res.Placements) != 0 {
		t.Fatalf("a lower priority took the nominated room: %+v", res.Placements)
	}
	// The same hold is not a victim for a second preemptor: no extra victims.
	if p2 := s.Preempt(preemptor(20, 3), Options{}); p2 != nil {
		t.Errorf("a second preemption found %v", victimNames(p2))
	}
	res := s.PlaceNominated(req, "a", Options{})
	if len(res.Placements) != 1 || res.Placements[0].Node != "a" || s.Nominated(highApp, 0) != "" {
		t.Fatalf("placed %+v, hold %q", res.Placements, s.Nominated(highApp, 0))
	}
}

func TestPlaceAllHigherPriorityFirst(t *testing.T) {
	s := snapshotOf([]*v4.Node{node("a", capacity(4, 16000, 100000))})
	low, high := request(lowApp, nil, 1), request(highApp, nil, 1)
	low.Resources.CPU, high.Resources.CPU, high.Priority = 3, 3, 100
	res := s.PlaceAll([]*Request{low, high}, Options{})
	if len(res[0].Placements) != 0 || len(res[1].Placements) != 1 {
		t.Errorf("low placed %d, high placed %d", len(res[0].Placements), len(res[1].Placements))
	}
}

func TestPlaceOrPreempt(t *testing.T) {
	s := snapshotOf([]*v4.Node{node("a", capacity(4, 16000, 100000)), node("b", capacity(4, 16000, 100000))},
		ptg(lowApp, 0, "a", 0, 3.9), ptg(midApp, 0, "b", 5, 3.9))
	req := preemptor(10, 3)
	req.Indexes = []int{0, 1, 2}
	res, pre := s.PlaceOrPreempt(req, Options{}, 10)
	if len(res.Placements) != 2 || len(pre) != 2 || len(res.Unplaced) != 1 {
		t.Fatalf("placed %d, preempted %d, unplaced %v", len(res.Placements), len(pre), res.Unplaced)
	}
	if pre[0].Node != "a" || pre[0].Index != 0 || pre[1].Node != "b" {
		t.Errorf("preemptions %+v", pre)
	}
}
