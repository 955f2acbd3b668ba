package executor

import (
	"context"
	"slices"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// pod is one task group the executor runs. Its goroutine (run) owns the lifecycle: every
// transition (start, failure, kill) happens there, so they cannot interleave; other
// goroutines only ask (requestKill, health results) and read (snapshot).
type pod struct {
	e        *Executor
	ns, name string
	plan     *podPlan

	// reportMu is held from a status change until its report returns, so reports leave
	// in the order of the changes.
	reportMu sync.Mutex

	mu      sync.Mutex
	status  v4.TaskGroupStatus
	final   bool   // a terminal status was reported; nothing follows it
	started []bool // tasks the driver has, which an ending must stop
	killing bool   // a deliberate kill was asked for
	// podIP is a container pod's IP once known (the network owner's, or the CNI
	// sandbox's); sandbox is set while a CNI sandbox may exist and needs a teardown.
	podIP   string
	sandbox bool
	// holding is set once the pod's network holder may run (holder.go).
	holding bool
	// vols is the state of the pod's volumes (podvolumes.go), with its own lock.
	vols volumeState
	// step is a workflow step's result once collected (step.go).
	step *v4.StepResult
	// cancelStart ends the start in progress (a kill interrupts a slow start).
	cancelStart context.CancelFunc

	killCh     chan struct{} // closed by requestKill
	healthKill chan healthFailure
	evict      chan string   // a volume over its limit (usage_volumes.go)
	done       chan struct{} // closed when run returns
}

func (e *Executor) newPod(tg *v4.TaskGroup) *pod {
	plan := e.planPod(tg)
	p := &pod{
		e:          e,
		ns:         plan.ns,
		name:       plan.name,
		plan:       plan,
		started:    make([]bool, len(plan.tasks)),
		killCh:     make(chan struct{}),
		healthKill: make(chan healthFailure, 1),
		evict:      make(chan string, 1),
		done:       make(chan struct{}),
	}
	p.status.HostIP = e.cfg.HostIP
	p.status.Phase = v4.StatusStaging
	for _, t := range plan.tasks {
		p.status.Tasks = append(p.status.Tasks, v4.TaskStatus{Name: t.name, Role: t.role(), Status: v4.StatusStaging})
	}
	return p
}

// update applies fn to the status and reports the result, unless the pod already
// reported a terminal status (which is final). It reports false when nothing was applied.
func (p *pod) update(fn func(st *v4.TaskGroupStatus)) bool {
	p.reportMu.Lock()
	defer p.reportMu.Unlock()
	p.mu.Lock()
	if p.final {
		p.mu.Unlock()
		return false
	}
	fn(&p.status)
	p.status.Phase = v4.AggregateTaskGroup(p.status.Tasks)
	p.status.Healthy = groupHealth(p.status.Tasks)
	if p.plan.roleChecks {
		p.deriveReady(&p.status)
	}
	p.status.Updated = time.Now()
	p.status.HostIP = p.e.cfg.HostIP
	p.final = v4.Terminal(p.status.Phase)
	snap := cloneStatus(p.status)
	p.mu.Unlock()
	if p.e.cfg.Report != nil {
		p.e.cfg.Report(p.ns, p.name, snap)
	}
	return true
}

// groupHealth is false when a task is unhealthy, true when every checked task is healthy,
// and nil while no task has a result.
func groupHealth(tasks []v4.TaskStatus) *bool {
	var out *bool
	for _, t := range tasks {
		if t.Healthy == nil {
			continue
		}
		if !*t.Healthy {
			return new(false)
		}
		out = new(true)
	}
	return out
}

func (p *pod) snapshot() v4.TaskGroupStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return cloneStatus(p.status)
}

func (p *pod) ended() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.final
}

func cloneStatus(st v4.TaskGroupStatus) v4.TaskGroupStatus {
	st.Tasks = slices.Clone(st.Tasks)
	st.PortsTaken = slices.Clone(st.PortsTaken)
	for i := range st.Tasks {
		if h := st.Tasks[i].Healthy; h != nil {
			st.Tasks[i].Healthy = new(*h)
		}
		if r := st.Tasks[i].Ready; r != nil {
			st.Tasks[i].Ready = new(*r)
		}
	}
	if st.Healthy != nil {
		st.Healthy = new(*st.Healthy)
	}
	if st.Ready != nil {
		st.Ready = new(*st.Ready)
	}
	return st
}

// requestKill asks the pod's goroutine for a deliberate kill and interrupts a start in
// progress. Asking twice is harmless.
func (p *pod) requestKill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.killing || p.final {
		return
	}
	p.killing = true
	close(p.killCh)
	if p.cancelStart != nil {
		p.cancelStart()
	}
}

func (p *pod) killRequested() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killing
}

func (p *pod) setStarted(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.started[i] = true
}

func (p *pod) startedTasks() []bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.started)
}
