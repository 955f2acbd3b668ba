package scheduler

import (
	"maps"
	"slices"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// Snapshot is the scheduler's view of the cluster: nodes with what they have free and
// the task groups placed on them. It is not safe for concurrent use; the owner serialises
// updates and placements (and clones it for dry runs).
type Snapshot struct {
	byName map[string]*nodeState
	order  []*nodeState // by name; rebuilt when nodes change
	tgs    map[string]*placedTG
	apps   map[AppKey]*appState
	// volumes are the CSI volume objects and their claims, by namespace/name, and
	// csiUse counts per node and plugin the volumes claimed there (csi_snapshot.go);
	// both nil until a volume or a task group that claims one arrives.
	volumes map[string]*volumeState
	csiUse  map[string]map[string]int
	// budgets are the owners' disruption budgets (preempt_budget.go); nil without any.
	budgets map[AppKey]budget
}

// nodeState is one node and what is used on it.
type nodeState struct {
	name, hostname string
	schedulable    bool // ready and not disabled
	notReady       bool
	taints         []v4.Taint // NoSchedule taints only
	preferNot      []v4.Taint // PreferNoSchedule taints: the node comes last (score.go)
	alloc          v4.NodeResources
	usedCPU        float64
	usedMem        float64
	usedDisk       float64
	usedExt        map[string]float64
	ranges         []v4.PortRange
	ports          map[int]int      // host port -> task groups holding it
	busy           map[int]busyPort // ports other programs hold (busy.go); shared by clones
	text           map[string]string
	scalar         map[string]float64
	set            map[string][]string
	labels         map[string]string
	// gpus are the node's cards (empty without a GPU inventory).
	gpus    []gpuCard
	gpuUsed []gpuUse // per card of gpus
	// taskGroups counts the task groups bound to the node, in any status (Usage);
	// holding those that hold resources, each with its executor's overhead.
	taskGroups int
	holding    int
	// labelApps counts the task groups on the node per "k:v" label and application,
	// for EXCLUDE.
	labelApps map[string]map[AppKey]int
	// csi are the node's CSI plugins by name (nil without any).
	csi map[string]*v4.CSIPlugin
	// placed are the task groups that hold resources here: Preempt's candidates.
	placed []*placedTG // each at its slot
	// revCPU and revMem are what revocable task groups reserve here, kept apart from
	// usedCPU and usedMem, which non-revocable placements check; lend is the agent's
	// lending report (revocable.go).
	revCPU, revMem float64
	lend           *v4.RevocableStatus
}

// placedTG is a task group as the scheduler accounts for it.
type placedTG struct {
	key    string // namespace/name
	app    AppKey
	index  int
	node   string
	res    v4.NodeResources
	ports  []int
	gpus   []v4.TaskGPU
	labels map[string]string
	attrs  map[string]string
	status string
	// volumes are the CSI volumes its pod claims (nil without any).
	volumes []tgVolume
	// priority is the owner's resolved priority (preempt.go); owner is app's appState,
	// which Preempt compares and keys by instead of the AppKey's strings; hold marks a
	// nominated instance's hold (nominate.go).
	priority int32
	owner    *appState
	hold     bool
	evictive bool // may be a victim: an application's or process's, not a hold (preempt.go)
	stopping bool // asked to stop (desired Stopped): no longer available to its owner
	slot     int  // index in its node's placed

	// revocable: a task group of the revocable tier, on lent capacity (revocable.go).
	revocable bool
}

// appState holds the counts of one application's task groups.
type appState struct {
	tgs map[string]*placedTG
	// counts[attribute][value] counts task groups that are not Finish or Failed, by the
	// attribute values recorded at placement (BCS's UNIQUE/MAXPER/GROUPBY semantics).
	counts map[string]map[string]int
	total  int
	// running counts its task groups Running and not asked to stop (disruption budgets).
	running int
}

// NewSnapshot returns an empty snapshot.
func NewSnapshot() *Snapshot {
	return &Snapshot{byName: map[string]*nodeState{}, tgs: map[string]*placedTG{}, apps: map[AppKey]*appState{}}
}

// holdsResources: a task group that ended frees its node's resources and ports.
func holdsResources(status string) bool {
	switch status {
	case v4.StatusFinish, v4.StatusFailed, v4.StatusKilled, v4.StatusError:
		return false
	}
	return true
}

// countsForConstraints: BCS counts every task group of the application that is not
// Finish or Failed (Lost, Killed and Running all count).
func countsForConstraints(status string) bool {
	return status != v4.StatusFinish && status != v4.StatusFailed
}

// SetNode adds or replaces a node, keeping what its task groups use.
func (s *Snapshot) SetNode(n *v4.Node) {
	ns := s.byName[n.Metadata.Name]
	existed := ns != nil
	if ns == nil {
		ns = &nodeState{name: n.Metadata.Name, ports: map[int]int{}, labelApps: map[string]map[AppKey]int{}}
		s.byName[ns.name] = ns
		s.order = nil
	}
	ns.hostname = n.Spec.Hostname
	if ns.hostname == "" {
		ns.hostname = ns.name
	}
	ns.notReady = n.Status.Phase != v4.NodeReady
	ns.schedulable = !ns.notReady && !n.Spec.Disabled
	ns.taints, ns.preferNot = ns.taints[:0], ns.preferNot[:0]
	for _, t := range n.Spec.Taints {
		switch t.Effect {
		case v4.TaintNoSchedule:
			ns.taints = append(ns.taints, t)
		case v4.TaintPreferNoSchedule:
			ns.preferNot = append(ns.preferNot, t)
		}
	}
	ns.alloc = n.Spec.Allocatable
	ns.ranges = n.Spec.PortRanges
	if len(ns.ranges) == 0 {
		ns.ranges = []v4.PortRange{v4.DefaultPortRange}
	}
	ns.busy = busyPortsOf(n.Status.BusyPorts)
	ns.text, ns.scalar, ns.set = n.Spec.Attributes.Text, n.Spec.Attributes.Scalar, n.Spec.Attributes.Set
	ns.labels = n.Metadata.Labels
	ns.setPlugins(n.Status.CSIPlugins)
	ns.lend = n.Status.Revocable
	if ns.setGPUs(n.Spec.GPUs) && existed {
		s.reaccountGPUs(ns)
	}
}

// RemoveNode forgets a node. Task groups still bound to it keep counting for their
// application (they may still run) but hold nothing anywhere.
func (s *Snapshot) RemoveNode(name string) {
	if _, ok := s.byName[name]; ok {
		delete(s.byName, name)
		s.order = nil
	}
}

// Nodes returns how many nodes the snapshot has.
func (s *Snapshot) Nodes() int { return len(s.byName) }

// sortedNodes returns the nodes ordered by name, so placement is deterministic.
func (s *Snapshot) sortedNodes() []*nodeState {
	if s.order == nil {
		s.order = make([]*nodeState, 0, len(s.byName))
		for _, n := range s.byName {
			s.order = append(s.order, n)
		}
		slices.SortFunc(s.order, func(a, b *nodeState) int { return strings.Compare(a.name, b.name) })
	}
	return s.order
}

// SetTaskGroup adds or replaces a task group (as stored), moving its accounting.
func (s *Snapshot) SetTaskGroup(tg *v4.TaskGroup) {
	ports := make([]int, 0, len(tg.Spec.Ports))
	for _, p := range tg.Spec.Ports {
		ports = append(ports, p.HostPort)
	}
	s.setPlaced(&placedTG{
		key:      tg.Metadata.Namespace + "/" + tg.Metadata.Name,
		app:      AppKey{Kind: tg.Spec.Owner.Kind, Namespace: tg.Metadata.Namespace, Name: tg.Spec.Owner.Name},
		index:    tg.Spec.Index,
		node:     tg.Spec.Node,
		res:      tg.Spec.Resources,
		ports:    ports,
		gpus:     tg.Spec.GPUs,
		labels:   tg.Spec.Labels,
		attrs:    tg.Spec.Attributes,
		status:   tg.Status.Phase,
		volumes:  volumesOf(tg.Metadata.Namespace, tg.Spec.Template.Spec.Volumes),
		priority: int32(min(max(tg.Spec.Priority, v4.MinPriority), v4.MaxSystemPriority)),
		stopping: tg.Spec.Desired == v4.DesiredStopped, revocable: tg.Spec.Revocable,
	})
}

// RemoveTaskGroup forgets a task group and frees what it held.
func (s *Snapshot) RemoveTaskGroup(namespace, name string) { s.removePlaced(namespace + "/" + name) }

func (s *Snapshot) removePlaced(key string) {
	if old := s.tgs[key]; old != nil {
		s.unaccount(old)
		delete(s.tgs, old.key)
		if app := s.apps[old.app]; app != nil {
			delete(app.tgs, old.key)
			if len(app.tgs) == 0 {
				delete(s.apps, old.app)
			}
		}
	}
}

func (s *Snapshot) setPlaced(p *placedTG) {
	s.removePlaced(p.key)
	s.tgs[p.key] = p
	app := s.apps[p.app]
	if app == nil {
		app = &appState{tgs: map[string]*placedTG{}, counts: map[string]map[string]int{}}
		s.apps[p.app] = app
	}
	app.tgs[p.key] = p
	p.owner = app
	p.evictive = !p.hold && preemptible(p.app.Kind)
	s.account(p, +1)
}

// account adds (sign +1) or removes (-1) what p holds and counts.
func (s *Snapshot) account(p *placedTG, sign int) {
	if p.owner != nil && p.status == v4.StatusRunning && !p.stopping {
		p.owner.running += sign
	}
	if app := s.apps[p.app]; app != nil && countsForConstraints(p.status) {
		app.total += sign
		for name, v := range p.attrs {
			byValue := app.counts[name]
			if byValue == nil {
				byValue = map[string]int{}
				app.counts[name] = byValue
			}
			byValue[v] += sign
		}
	}
	if p.volumes != nil && holdsResources(p.status) { // a claim outlives its node's removal
		s.accountVolumes(p, sign)
	}
	n := s.byName[p.node]
	if n == nil {
		return
	}
	n.taskGroups += sign
	for k, v := range p.labels { // EXCLUDE sees task groups in any status
		kv := k + ":" + v
		apps := n.labelApps[kv]
		if apps == nil {
			apps = map[AppKey]int{}
			n.labelApps[kv] = apps
		}
		apps[p.app] += sign
		if apps[p.app] <= 0 {
			delete(apps, p.app)
		}
	}
	if !holdsResources(p.status) {
		return
	}
	n.holding += sign
	n.setHolding(p, sign)
	f := float64(sign)
	if p.revocable {
		n.revCPU += f * p.res.CPU
		n.revMem += f * p.res.MemoryMB
	} else {
		n.usedCPU += f * p.res.CPU
		n.usedMem += f * p.res.MemoryMB
	}
	n.usedDisk += f * p.res.DiskMB
	for name, v := range p.res.Extended {
		if n.usedExt == nil {
			n.usedExt = map[string]float64{}
		}
		n.usedExt[name] += f * v
	}
	n.accountGPUs(p.gpus, sign)
	for _, port := range p.ports {
		n.ports[port] += sign
		if n.ports[port] <= 0 {
			delete(n.ports, port)
		}
	}
}

func (s *Snapshot) unaccount(p *placedTG) { s.account(p, -1) }

// Indexes returns the instance indexes of an application's task groups that still count
// (not Finish or Failed), sorted.
func (s *Snapshot) Indexes(app AppKey) []int {
	var out []int
	if a := s.apps[app]; a != nil {
		for _, p := range a.tgs {
			if countsForConstraints(p.status) {
				out = append(out, p.index)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Clone returns an independent copy, for dry runs.
func (s *Snapshot) Clone() *Snapshot {
	c := NewSnapshot()
	for name, n := range s.byName {
		cp := *n
		cp.taints = slices.Clone(n.taints)
		cp.preferNot = slices.Clone(n.preferNot)
		cp.usedExt = maps.Clone(n.usedExt)
		cp.gpuUsed = slices.Clone(n.gpuUsed) // the cards themselves are never written
		cp.ports = maps.Clone(n.ports)
		cp.placed = nil // filled below with the copies of its task groups
		cp.labelApps = make(map[string]map[AppKey]int, len(n.labelApps))
		for kv, apps := range n.labelApps {
			cp.labelApps[kv] = maps.Clone(apps)
		}
		c.byName[name] = &cp
	}
	for key, p := range s.tgs {
		cp := *p
		c.tgs[key] = &cp
		app := c.apps[p.app]
		if app == nil {
			app = &appState{tgs: map[string]*placedTG{}, counts: map[string]map[string]int{}}
			c.apps[p.app] = app
		}
		app.tgs[key] = &cp
		cp.owner = app
		if n := c.byName[p.node]; n != nil && holdsResources(p.status) {
			n.setHolding(&cp, +1)
		}
	}
	c.budgets = maps.Clone(s.budgets)
	if s.order != nil { // keep the name order, so a clone does not sort again
		c.order = make([]*nodeState, len(s.order))
		for i, n := range s.order {
			c.order[i] = c.byName[n.name]
		}
	}
	s.cloneVolumes(c)
	for key, a := range s.apps {
		ca := c.apps[key]
		ca.total, ca.running = a.total, a.running
		for name, byValue := range a.counts {
			ca.counts[name] = maps.Clone(byValue)
		}
	}
	return c
}
