package scheduler

import (
	"container/heap"
	"fmt"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// reqState is one request compiled against the snapshot.
type reqState struct {
	s        *Snapshot
	req      *Request
	app      *appState
	need     v4.NodeResources // per task group, overhead included
	overhead v4.NodeResources // the executor's part of need
	items    []*item
	tol      tolerations
	recorded []string
	binpack  bool
	// gpus are the tasks' GPU asks, hardest first; gpuScratch is reused by fitsGPUs.
	gpus       []TaskGPURequest
	shares     bool // a task asks for a share of a card
	gpuScratch []gpuUse
	// fit is the cards fitsNow last chose and the node it chose them on: placing on that
	// node takes them instead of choosing again. Placing clears it (the cards' use
	// changed).
	fit struct {
		node *nodeState
		gpus []v4.TaskGPU
	}
	cluster string
	stamp   int64
	// csi are the volumes the pod claims (csi.go).
	csi []csiAsk
}

func (st *reqState) count(name, value string) int { return st.app.counts[name][value] }
func (st *reqState) total() int                   { return st.app.total }

// PlaceAll places several requests in one pass, higher priorities first and in the
// given order among equal ones; later requests see the placements of earlier ones. The
// results are in the order of reqs.
func (s *Snapshot) PlaceAll(reqs []*Request, opts Options) []Result {
	out := make([]Result, len(reqs))
	for _, i := range ByPriority(reqs) {
		out[i] = s.Place(reqs[i], opts)
	}
	return out
}

// Place places the request's instances, updating the snapshot as it goes. Instances that
// fit nowhere are returned in Unplaced with the reason; as all instances of a request are
// alike, the first that fails ends the request.
func (s *Snapshot) Place(req *Request, opts Options) Result {
	st := s.compile(req, opts)
	res := Result{Request: req, Placements: make([]Placement, 0, len(req.Indexes))}
	cands := s.staticCandidates(st)
	var placed int
	switch g := st.groupByItem(); {
	case g != nil:
		placed = s.placeGrouped(st, cands, g, &res)
	case st.nonMonotone():
		placed = s.placeScanning(st, cands, &res)
	default:
		placed = s.placeHeap(st, cands, &res)
	}
	if placed < len(req.Indexes) {
		res.Unplaced = append([]int(nil), req.Indexes[placed:]...)
		res.Reason = s.explain(st)
	}
	if len(st.app.tgs) == 0 {
		delete(s.apps, req.App)
	}
	return res
}

func (s *Snapshot) compile(req *Request, opts Options) *reqState {
	app := s.apps[req.App]
	if app == nil {
		app = &appState{tgs: map[string]*placedTG{}, counts: map[string]map[string]int{}}
		s.apps[req.App] = app
	}
	overhead := opts.Overhead
	if overhead.CPU == 0 && overhead.MemoryMB == 0 && overhead.DiskMB == 0 {
		overhead = DefaultOverhead
	}
	need := req.Resources
	need.CPU += overhead.CPU
	need.MemoryMB += overhead.MemoryMB
	need.DiskMB += overhead.DiskMB
	strategy := req.Strategy
	if strategy == "" {
		strategy = opts.Strategy
	}
	cluster := opts.Cluster
	if cluster == "" {
		cluster = DefaultCluster
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	return &reqState{
		s: s, req: req, app: app, need: need, overhead: overhead,
		items:    compileConstraint(req.Constraint, req.App),
		tol:      tolerationsOf(req.Constraint),
		recorded: recordedNames(req.Constraint),
		binpack:  strategy == Binpack,
		gpus:     gpuOrder(req.GPUs),
		shares:   hasShare(req.GPUs),
		cluster:  cluster,
		stamp:    now().UnixNano(),
		csi:      csiAsks(req),
	}
}

// groupByItem returns the single-GROUPBY item placement can spread over, when it is the
// only item whose answer can change back to yes.
func (st *reqState) groupByItem() *item {
	var g *item
	for _, it := range st.items {
		if it.nonMonotone {
			if it.groupBy == nil || g != nil {
				return nil
			}
			g = it
		}
	}
	return g
}

func (st *reqState) nonMonotone() bool {
	for _, it := range st.items {
		if it.nonMonotone {
			return true
		}
	}
	return false
}

// staticCandidates returns the nodes that pass every check that cannot change while the
// request is placed: readiness, taints, the runtime and the static constraint items.
func (s *Snapshot) staticCandidates(st *reqState) []*candidate {
	nodes := s.sortedNodes()
	out := make([]*candidate, 0, len(nodes))
	cs := make([]candidate, len(nodes)) // one allocation for all candidates
	for i, n := range nodes {
		if !st.wanted(n) {
			continue
		}
		if ok, _ := checkNode(n); !ok {
			continue
		}
		if _, bad := st.tol.untolerated(n); bad {
			continue
		}
		if !st.runtimeOK(n) {
			continue
		}
		if st.volumesStatic(n) != "" {
			continue
		}
		if !st.staticItemsOK(n) {
			continue
		}
		cs[i] = candidate{node: n, order: i, score: st.point(n), avoided: st.tol.avoided(n)}
		out = append(out, &cs[i])
	}
	return out
}

// wanted reports whether the request may use the node at all (Request.Node).
func (st *reqState) wanted(n *nodeState) bool {
	return (st.req.Node == "" || st.req.Node == n.name) && st.req.AvoidNode != n.name
}

func (st *reqState) staticItemsOK(n *nodeState) bool {
	for _, it := range st.items {
		if !it.dynamic && !it.ok(n, st) {
			return false
		}
	}
	return true
}

// fitsNow runs the checks that placements of this request can change, except skip.
func (st *reqState) fitsNow(n *nodeState, skip *item) bool {
	if st.volumesClaimable(n) != "" {
		return false
	}
	if ok, _ := st.fitsResources(n); !ok {
		return false
	}
	if ok, _ := st.fitsPorts(n); !ok {
		return false
	}
	gpus, why := st.fitsGPUs(n)
	if why != "" {
		return false
	}
	st.fit.node, st.fit.gpus = n, gpus
	for _, it := range st.items {
		if it.dynamic && it != skip && !it.ok(n, st) {
			return false
		}
	}
	return true
}

// placeHeap serves requests whose checks only ever turn from yes to no while it places
// (resources and ports shrink, UNIQUE/MAXPER counts grow): a node that fails once is
// dropped for good, so each instance costs a few heap operations.
func (s *Snapshot) placeHeap(st *reqState, cands []*candidate, res *Result) int {
	h := &candHeap{items: cands, binpack: st.binpack}
	heap.Init(h)
	placed := 0
	for placed < len(st.req.Indexes) {
		if h.Len() == 0 {
			break
		}
		c := h.items[0]
		if !st.fitsNow(c.node, nil) {
			heap.Pop(h)
			continue
		}
		s.placeTop(st, h, st.req.Indexes[placed], res)
		placed++
	}
	return placed
}

// placeTop places the instance index on the best candidate, the top of h, which then
// takes its place in h by its new score.
func (s *Snapshot) placeTop(st *reqState, h *candHeap, index int, res *Result) {
	c := h.items[0]
	res.Placements = append(res.Placements, s.placeOn(st, c.node, index))
	c.score = st.point(c.node)
	heap.Fix(h, 0)
}

// placeGrouped spreads a single-GROUPBY request: one heap per value of the set; each
// instance goes to the best node among the values still under the limit.
func (s *Snapshot) placeGrouped(st *reqState, cands []*candidate, g *item, res *Result) int {
	gb := g.groupBy
	groups := make(map[string]*candHeap, len(gb.items))
	for _, c := range cands {
		v, in := gb.value(c.node)
		if !in {
			continue
		}
		h := groups[v]
		if h == nil {
			h = &candHeap{binpack: st.binpack}
			groups[v] = h
		}
		h.items = append(h.items, c)
	}
	for _, h := range groups {
		heap.Init(h)
	}
	placed := 0
	for placed < len(st.req.Indexes) {
		limit := gb.limit(st)
		var best *candidate
		var bestHeap *candHeap
		for _, v := range gb.items {
			h := groups[v]
			if h == nil || st.count(gb.name, v) >= limit {
				continue
			}
			for h.Len() > 0 && !st.fitsNow(h.items[0].node, g) {
				heap.Pop(h)
			}
			if h.Len() > 0 && (best == nil || better(h.items[0], best, st.binpack)) {
				best, bestHeap = h.items[0], h
			}
		}
		if best == nil {
			break
		}
		s.placeTop(st, bestHeap, st.req.Indexes[placed], res)
		placed++
	}
	return placed
}

// placeScanning is the general path (GROUPBY inside an OR, or several GROUPBYs): every
// instance looks at every candidate.
func (s *Snapshot) placeScanning(st *reqState, cands []*candidate, res *Result) int {
	placed := 0
	for placed < len(st.req.Indexes) {
		var best *candidate
		for _, c := range cands {
			if (best == nil || better(c, best, st.binpack)) && st.fitsNow(c.node, nil) {
				best = c
			}
		}
		if best == nil {
			break
		}
		res.Placements = append(res.Placements, s.placeOn(st, best.node, st.req.Indexes[placed]))
		placed++
		best.score = st.point(best.node)
	}
	return placed
}

// placeOn binds instance index to node n: ports, recorded attributes and the accounting.
func (s *Snapshot) placeOn(st *reqState, n *nodeState, index int) Placement {
	gpus := st.fit.gpus
	if st.fit.node != n {
		gpus, _ = st.fitsGPUs(n) // the same choice fitsNow would make
	}
	st.fit.node, st.fit.gpus = nil, nil
	ports, passed := st.allocatePorts(n)
	hostPorts := make([]int, len(ports))
	for i, p := range ports {
		hostPorts[i] = p.HostPort
	}
	attrs := make(map[string]string, len(st.recorded))
	for _, name := range st.recorded {
		if v, ok := n.attr(name); ok {
			attrs[name] = v.key()
		}
	}
	app := st.req.App
	name := fmt.Sprintf("%d.%s.%s.%s.%d", index, app.Name, app.Namespace, st.cluster, st.stamp)
	s.setPlaced(&placedTG{
		key: app.Namespace + "/" + name, app: app, index: index, node: n.name,
		res: st.need, ports: hostPorts, gpus: gpus, labels: st.req.Labels, attrs: attrs, status: v4.StatusStaging,
		volumes: st.placedVolumes(), priority: st.req.Priority, revocable: st.req.Revocable,
	})
	return Placement{Index: index, Name: name, Node: n.name, Ports: ports, GPUs: gpus, Attributes: attrs, Resources: st.need, Overhead: st.overhead, PassedOver: passed}
}

// explain counts, over every node, the first check that rejects it now.
func (s *Snapshot) explain(st *reqState) *Reason {
	c := reasonCounter{}
	for _, n := range s.sortedNodes() {
		if !st.wanted(n) {
			continue // a request pinned to one node (or kept off one) is explained by the others
		}
		c.nodes++
		if why := st.firstFailure(n); why != "" {
			c.add(why)
		} else {
			c.add("fits, but instances of a GROUPBY must wait for other groups") // cannot happen outside GROUPBY
		}
	}
	return c.reason()
}

func (st *reqState) firstFailure(n *nodeState) string {
	if !st.wanted(n) {
		return "not node " + st.req.Node
	}
	if ok, why := checkNode(n); !ok {
		return why
	}
	if t, bad := st.tol.untolerated(n); bad {
		return fmt.Sprintf("taint %s=%s not tolerated", t.Key, t.Value)
	}
	if !st.runtimeOK(n) {
		return runtimeFailure(st.req.Runtime)
	}
	if why := st.volumesStatic(n); why != "" {
		return why
	}
	if why := st.volumesClaimable(n); why != "" {
		return why
	}
	for _, it := range st.items {
		if !it.ok(n, st) {
			return "failed constraint " + it.String()
		}
	}
	if ok, why := st.fitsResources(n); !ok {
		return why
	}
	if ok, why := st.fitsPorts(n); !ok {
		return why
	}
	if _, why := st.fitsGPUs(n); why != "" {
		return why
	}
	return ""
}
