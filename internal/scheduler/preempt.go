package scheduler

import (
	"cmp"
	"container/heap"
	"slices"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// Preemption (docs/policy.md, "Priorities and preemption"): when one instance of a
// request fits nowhere, Preempt looks for the one node where evicting task groups of
// lower priority makes room, and the fewest, lowest-priority such victims there.
//
// Each candidate node is first estimated with arithmetic only (cpu, memory, disk and
// extended resources freed by the victims): greedy in victim order, then each victim
// reprieved when the rest still free enough. The estimates, best first, are then checked
// exactly (the victims taken off the snapshot, every check of Place run again, so ports,
// GPU cards and shares and dynamic constraints count) until no estimate left can beat the
// best exact answer: an exact answer never needs fewer victims than its estimate.

// Victim is a task group a preemption evicts.
type Victim struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Owner     AppKey `json:"owner"`
	Index     int    `json:"index"`
	Priority  int32  `json:"priority"`
}

// Preemption is the node one instance of a request goes to once its victims are gone.
type Preemption struct {
	Index   int      `json:"index"` // the instance (PlaceOrPreempt sets it)
	Node    string   `json:"node"`
	Victims []Victim `json:"victims"`
	// GPUs are the cards the instance would get there once the victims are gone: a
	// nomination holds them (NominateCards).
	GPUs []v4.TaskGPU `json:"gpus,omitempty"`
}

// nodePlan is the victims on one node, ranked by the highest victim priority, then the
// number of victims, then the sum of their priorities, then the node's name order.
type nodePlan struct {
	node    *nodeState
	order   int
	victims []*placedTG
	maxPrio int32
	sumPrio int64
}

func (a *nodePlan) compare(b *nodePlan) int {
	return cmp.Or(cmp.Compare(a.maxPrio, b.maxPrio), cmp.Compare(len(a.victims), len(b.victims)),
		cmp.Compare(a.sumPrio, b.sumPrio), cmp.Compare(a.order, b.order))
}

func (p *nodePlan) rank() *nodePlan {
	p.maxPrio, p.sumPrio = v4.MinPriority, 0
	for _, v := range p.victims {
		p.maxPrio = max(p.maxPrio, v.priority)
		p.sumPrio += int64(v.priority)
	}
	return p
}

// Preempt returns where the first instance of req could go by evicting lower priorities,
// or nil when no node has such room (or req may not preempt). The snapshot is left as it
// was: the caller evicts the victims and places the instance once they are gone.
func (s *Snapshot) Preempt(req *Request, opts Options) *Preemption {
	if req.NoPreempt || len(req.Indexes) == 0 {
		return nil
	}
	st := s.compile(req, opts)
	defer func() {
		if len(st.app.tgs) == 0 {
			delete(s.apps, req.App)
		}
	}()
	pc := &preemptCtx{st: st, budgets: map[*appState]int{}}
	cands := s.staticCandidates(st)
	plans := make([]nodePlan, 0, len(cands))
	pc.arena = make([]*placedTG, 0, 4*len(cands))
	for _, c := range cands {
		if vs := pc.estimate(c.node); vs != nil {
			p := nodePlan{node: c.node, order: c.order, victims: vs}
			plans = append(plans, *p.rank())
		}
	}
	h := planHeap(plans) // usually the first estimate holds: no need to sort them all
	heap.Init(&h)
	var best *nodePlan
	var bestGPUs []v4.TaskGPU // the cards the exact check chose on best's node
	for h.Len() > 0 {
		next := heap.Pop(&h).(nodePlan)
		if best != nil && next.compare(best) >= 0 {
			break // estimates are lower bounds: none left can win
		}
		if vs, gpus := pc.exact(next.node, next.victims); vs != nil {
			p := nodePlan{node: next.node, order: next.order, victims: vs}
			if p.rank(); best == nil || p.compare(best) < 0 {
				best, bestGPUs = &p, gpus
			}
		}
	}
	if best == nil {
		return nil
	}
	out := &Preemption{Node: best.node.name, Victims: make([]Victim, len(best.victims)), GPUs: bestGPUs}
	for i, v := range best.victims {
		ns, name, _ := strings.Cut(v.key, "/")
		out.Victims[i] = Victim{Namespace: ns, Name: name, Owner: v.app, Index: v.index, Priority: v.priority}
	}
	return out
}

// preemptCtx is one Preempt call: the request and the owners' budgets left.
type preemptCtx struct {
	st      *reqState
	budgets map[*appState]int // evictable per owner, -1 unlimited (filled as owners come)
	scratch []*placedTG
	taken   []*placedTG // estimate's, reused from node to node
	arena   []*placedTG // the estimates' victims
}

// candidates are n's task groups the request may evict, in victim order: lowest priority
// first, then the largest (fewer victims), then by name.
func (pc *preemptCtx) candidates(n *nodeState) []*placedTG {
	out := pc.scratch[:0]
	for _, p := range n.placed {
		if p.evictive && p.priority < pc.st.req.Priority && p.owner != pc.st.app && !p.revocable {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *placedTG) int {
		if a.priority != b.priority {
			return int(a.priority) - int(b.priority)
		}
		if a.res.CPU != b.res.CPU {
			return cmp.Compare(b.res.CPU, a.res.CPU)
		}
		if a.res.MemoryMB != b.res.MemoryMB {
			return cmp.Compare(b.res.MemoryMB, a.res.MemoryMB)
		}
		if a.index != b.index {
			return a.index - b.index
		}
		return strings.Compare(a.key, b.key)
	})
	pc.scratch = out
	return out
}

// budgetLeft is how many task groups of app may still be evicted, given the victims
// already taken on this node; -1 unlimited.
func (pc *preemptCtx) budgetLeft(p *placedTG, taken []*placedTG) int {
	if len(pc.st.s.budgets) == 0 {
		return -1
	}
	left, ok := pc.budgets[p.owner]
	if !ok {
		left = pc.st.s.evictable(p.app)
		pc.budgets[p.owner] = left
	}
	if left < 0 {
		return -1
	}
	for _, v := range taken {
		if v.owner == p.owner {
			left--
		}
	}
	return left
}

// estimate is the victims on n by arithmetic alone, nil when evicting every candidate
// does not free enough.
func (pc *preemptCtx) estimate(n *nodeState) []*placedTG {
	cands := pc.candidates(n)
	if len(cands) == 0 {
		return nil
	}
	var freed v4.NodeResources
	taken := pc.taken[:0]
	defer func() { pc.taken = taken[:0] }()
	fits := pc.st.fitsFreed(n, &freed)
	for _, p := range cands {
		if fits {
			break
		}
		if pc.budgetLeft(p, taken) == 0 {
			continue
		}
		taken = append(taken, p)
		addRes(&freed, &p.res, 1)
		fits = pc.st.fitsFreed(n, &freed)
	}
	if !fits {
		return nil
	}
	if len(taken) == 0 { // enough is free, another check fails: the exact check finds what to evict
		return []*placedTG{}
	}
	for i := len(taken) - 1; i >= 0; i-- { // reprieve, highest priority first
		addRes(&freed, &taken[i].res, -1)
		if pc.st.fitsFreed(n, &freed) {
			taken = slices.Delete(taken, i, i+1)
		} else {
			addRes(&freed, &taken[i].res, 1)
		}
	}
	start := len(pc.arena) // one backing array for every node's estimate
	pc.arena = append(pc.arena, taken...)
	return pc.arena[start:len(pc.arena):len(pc.arena)]
}

// exact takes the victims off the snapshot, more when the estimate's are not enough,
// until every check passes, reprieves what is not needed, and puts them all back.
func (pc *preemptCtx) exact(n *nodeState, estimate []*placedTG) ([]*placedTG, []v4.TaskGPU) {
	s, st := pc.st.s, pc.st
	taken := slices.Clone(estimate)
	for _, p := range taken {
		s.account(p, -1)
	}
	defer func() { st.fit.node, st.fit.gpus = nil, nil }()
	fits := st.fitsNow(n, nil)
	for _, p := range pc.candidates(n) { // what is still on n, in victim order
		if fits {
			break
		}
		if pc.budgetLeft(p, taken) == 0 {
			continue
		}
		taken = append(taken, p)
		s.account(p, -1)
		fits = st.fitsNow(n, nil)
	}
	var gpus []v4.TaskGPU
	if fits {
		slices.SortFunc(taken, func(a, b *placedTG) int { return cmp.Compare(a.priority, b.priority) })
		for i := len(taken) - 1; i >= 0; i-- {
			s.account(taken[i], +1)
			if st.fitsNow(n, nil) {
				taken = slices.Delete(taken, i, i+1) // reprieved: it stays accounted
			} else {
				s.account(taken[i], -1)
			}
		}
		if len(st.gpus) > 0 && st.fitsNow(n, nil) { // the cards it gets once the victims are gone
			gpus = slices.Clone(st.fit.gpus)
		}
	}
	for _, p := range taken {
		s.account(p, +1)
	}
	if !fits {
		return nil, nil
	}
	return taken, gpus
}

// fitsFreed is fitsResources with freed given back to n.
func (st *reqState) fitsFreed(n *nodeState, freed *v4.NodeResources) bool {
	need := &st.need
	if n.usedCPU-freed.CPU+need.CPU > n.alloc.CPU+epsilon || n.usedMem-freed.MemoryMB+need.MemoryMB > n.alloc.MemoryMB+epsilon ||
		n.usedDisk-freed.DiskMB+need.DiskMB > n.alloc.DiskMB+epsilon {
		return false
	}
	for name, v := range need.Extended {
		if isGPUResource(name) && (n.hasGPUInventory() || st.shares) {
			continue // the exact check counts the cards
		}
		if n.usedExt[name]-freed.Extended[name]+v > n.alloc.Extended[name]+epsilon {
			return false
		}
	}
	return true
}

// addRes adds sign times r to dst (cpu, memory, disk and extended resources).
func addRes(dst, r *v4.NodeResources, sign float64) {
	dst.CPU += sign * r.CPU
	dst.MemoryMB += sign * r.MemoryMB
	dst.DiskMB += sign * r.DiskMB
	for name, v := range r.Extended {
		if dst.Extended == nil {
			dst.Extended = map[string]float64{}
		}
		dst.Extended[name] += sign * v
	}
}

// planHeap orders estimates, best first.
type planHeap []nodePlan

func (h planHeap) Len() int           { return len(h) }
func (h planHeap) Less(i, j int) bool { return h[i].compare(&h[j]) < 0 }
func (h planHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *planHeap) Push(x any)        { *h = append(*h, x.(nodePlan)) }
func (h *planHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// preemptible reports whether task groups of an owner of kind may be victims: those of
// applications and processes (deployments' included), whose controller stops them and
// restarts them per their restart policy. Daemonsets (one per node by design), jobs,
// workflow steps and dependency pods are never evicted.
func preemptible(kind v4.Kind) bool {
	return kind == v4.KindApplication || kind == v4.KindProcess
}
