package scheduler

import (
	"cmp"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
)

// setScheduling copies a spec's resolved priority and preemption policy.
func (r *Request) setScheduling(s *v4.Scheduling) {
	r.Priority, r.NoPreempt = s.PriorityValue(), !s.MayPreempt()
	r.Revocable = s.Revocable()
	r.NoPreempt = r.NoPreempt || r.Revocable // it takes only what is idle
}

// budget is one owner's disruption budget: how many of its instances are wanted and how
// many of them may be unavailable at once.
type budget struct{ desired, maxUnavailable int }

// SetDisruptionBudget records the disruption budget of app (spec.disruptionBudget):
// Preempt evicts one of its task groups only while fewer than maxUnavailable of its
// desired instances are not running, counting the evictions it plans.
func (s *Snapshot) SetDisruptionBudget(app AppKey, desired, maxUnavailable int) {
	if s.budgets == nil {
		s.budgets = map[AppKey]budget{}
	}
	s.budgets[app] = budget{desired: desired, maxUnavailable: maxUnavailable}
}

// RemoveDisruptionBudget forgets app's budget: its task groups may all be evicted.
func (s *Snapshot) RemoveDisruptionBudget(app AppKey) { delete(s.budgets, app) }

// evictable is how many more task groups of app may be evicted now, or -1 without a
// budget (any number).
func (s *Snapshot) evictable(app AppKey) int {
	b, ok := s.budgets[app]
	if !ok {
		return -1
	}
	running := 0 // a victim still stopping is down already (appState.running)
	if a := s.apps[app]; a != nil {
		running = a.running
	}
	return max(0, b.maxUnavailable-max(0, b.desired-running))
}

// setHolding adds (sign +1) or removes p from the task groups that hold n's resources.
func (n *nodeState) setHolding(p *placedTG, sign int) {
	if sign > 0 {
		p.slot = len(n.placed)
		n.placed = append(n.placed, p)
		return
	}
	if p.slot >= len(n.placed) || n.placed[p.slot] != p {
		return // accounted on an earlier state of the node (removed and added again)
	}
	last := n.placed[len(n.placed)-1]
	n.placed[p.slot], last.slot = last, p.slot
	n.placed[len(n.placed)-1] = nil
	n.placed = n.placed[:len(n.placed)-1]
}

// ByPriority returns the indexes of reqs, highest priority first, stable among equals:
// the order in which waiting requests are placed.
func ByPriority(reqs []*Request) []int {
	order := make([]int, len(reqs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(reqs[b].Priority, reqs[a].Priority) })
	return order
}

// PlaceOrPreempt places req like Place and then, for each instance that fits nowhere,
// up to limit of them, evicts the victims Preempt chooses from the snapshot and places
// the instance on their node: what a plan shows (the controllers instead wait for the
// victims to stop). It returns the preemptions in the order of the instances.
func (s *Snapshot) PlaceOrPreempt(req *Request, opts Options, limit int) (Result, []Preemption) {
	res := s.Place(req, opts)
	var pre []Preemption
	for len(res.Unplaced) > 0 && len(pre) < limit {
		one := *req
		one.Indexes = res.Unplaced[:1]
		p := s.Preempt(&one, opts)
		if p == nil {
			break
		}
		for _, v := range p.Victims {
			s.RemoveTaskGroup(v.Namespace, v.Name)
		}
		one.Node = p.Node
		r := s.Place(&one, opts)
		if len(r.Placements) == 0 {
			break // cannot happen: the exact check placed it there
		}
		p.Index = one.Indexes[0]
		pre = append(pre, *p)
		res.Placements = append(res.Placements, r.Placements...)
		res.Unplaced = res.Unplaced[1:]
	}
	if len(res.Unplaced) == 0 {
		res.Unplaced, res.Reason = nil, nil
	}
	return res, pre
}
