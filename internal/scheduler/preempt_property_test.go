package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// TestPropertyPreemption checks Preempt on random clusters against plain rules: victims
// are of lower priority and on the chosen node; evicting them lets the instance on; each
// is needed (putting any one back leaves no room); budgets hold; the highest victim
// priority is the lowest any node allows; and with no answer, evicting every lower
// priority on any node would not be enough.
func TestPropertyPreemption(t *testing.T) {
	found := 0
	defer func() {
		if found < 50 { // the shape must exercise the search, not only the refusals
			t.Errorf("only %d of the cases preempted", found)
		}
	}()
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 37))
		nodes, tgs := randomPriorityCluster(rng)
		req := preemptor(int32(rng.IntN(6)), 0.5+float64(rng.IntN(6))*0.5)
		if rng.IntN(4) == 0 {
			req.FixedPorts = []v4.AllocatedPort{{Name: "p", HostPort: 9000 + rng.IntN(3)}}
		}
		s := snapshotOf(nodes, tgs...)
		withBudgets := rng.IntN(3) == 0
		if withBudgets {
			s.SetDisruptionBudget(lowApp, 6, 1+rng.IntN(2))
		}
		if r := s.Clone().Place(req, Options{}); len(r.Placements) > 0 {
			continue // preemption is asked only when nothing fits
		}
		p := s.Preempt(req, Options{})
		if p == nil {
			if !withBudgets {
				for _, n := range nodes {
					if thresholdOn(s, req, n.Metadata.Name) != noThreshold {
						t.Fatalf("seed %d: no preemption, but evicting lower priorities on %s makes room", seed, n.Metadata.Name)
					}
				}
			}
			continue
		}
		found++
		checkPreemption(t, seed, s, req, p, withBudgets)
	}
}

func checkPreemption(t *testing.T, seed uint64, s *Snapshot, req *Request, p *Preemption, withBudgets bool) {
	t.Helper()
	var maxPrio int32 = v4.MinPriority
	perApp := map[AppKey]int{}
	for _, v := range p.Victims {
		tg := s.tgs[v.Namespace+"/"+v.Name]
		if tg == nil || tg.node != p.Node || tg.priority >= req.Priority {
			t.Fatalf("seed %d: victim %+v is not a lower priority on %s", seed, v, p.Node)
		}
		maxPrio = max(maxPrio, v.Priority)
		perApp[v.Owner]++
	}
	if left := s.evictable(lowApp); left >= 0 && perApp[lowApp] > left {
		t.Fatalf("seed %d: %d victims of a budget that allows %d", seed, perApp[lowApp], left)
	}
	if !fitsWithout(s, req, p.Node, p.Victims, -1) {
		t.Fatalf("seed %d: the victims %v do not make room on %s", seed, victimNames(p), p.Node)
	}
	for i := range p.Victims {
		if fitsWithout(s, req, p.Node, p.Victims, i) {
			t.Fatalf("seed %d: victim %s is not needed", seed, p.Victims[i].Name)
		}
	}
	if withBudgets {
		return
	}
	for name := range s.byName {
		if th := thresholdOn(s, req, name); th < maxPrio {
			t.Fatalf("seed %d: node %s needs victims up to priority %d, the choice %s up to %d", seed, name, th, p.Node, maxPrio)
		}
	}
}

// fitsWithout reports whether one instance of req fits on node once the victims but the
// one at keep (-1: none kept) are gone.
func fitsWithout(s *Snapshot, req *Request, node string, victims []Victim, keep int) bool {
	c := s.Clone()
	for i, v := range victims {
		if i != keep {
			c.RemoveTaskGroup(v.Namespace, v.Name)
		}
	}
	one := *req
	one.Node = node
	return len(c.Place(&one, Options{}).Placements) == 1
}

const noThreshold = int32(1 << 30)

// thresholdOn is the lowest priority P such that evicting every task group of priority
// at most P (below the request's) lets one instance on node; noThreshold when none does.
func thresholdOn(s *Snapshot, req *Request, node string) int32 {
	for p := int32(-1); p < req.Priority; p++ {
		c := s.Clone()
		for key, tg := range c.tgs {
			if tg.node == node && tg.priority <= p && tg.app != req.App {
				ns, name, _ := cutKey(key)
				c.RemoveTaskGroup(ns, name)
			}
		}
		one := *req
		one.Node = node
		if len(c.Place(&one, Options{}).Placements) == 1 {
			return max(p, v4.MinPriority)
		}
	}
	return noThreshold
}

func cutKey(key string) (string, string, bool) {
	for i := range key {
		if key[i] == '/' {
			return key[:i], key[i+1:], true
		}
	}
	return "", key, false
}

// randomPriorityCluster is 2 to 5 nodes of 4 cpu, each filled with task groups of three
// owners at priorities 0 to 5, some holding one of ports 9000 to 9002.
func randomPriorityCluster(rng *rand.Rand) ([]*v4.Node, []*v4.TaskGroup) {
	var nodes []*v4.Node
	var tgs []*v4.TaskGroup
	owners := []AppKey{lowApp, midApp, {Kind: v4.KindProcess, Namespace: "ns-c", Name: "other"}}
	idx := 0
	for i := range 2 + rng.IntN(4) {
		name := fmt.Sprintf("n%d", i)
		nodes = append(nodes, node(name, capacity(4, 16000, 100000)))
		used := 0.0
		for used < 3.5 {
			cpu := 0.25 * float64(1+rng.IntN(8))
			if used+cpu > 4 {
				break
			}
			t := ptg(owners[rng.IntN(len(owners))], idx, name, int32(rng.IntN(6)), cpu)
			if rng.IntN(5) == 0 {
				t.Spec.Ports = []v4.AllocatedPort{{HostPort: 9000 + rng.IntN(3)}}
			}
			tgs = append(tgs, t)
			used += cpu
			idx++
		}
	}
	return nodes, tgs
}
