package agent

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// The revocable tier on the node (docs/policy.md, "Revocable capacity"): Mesos' resource
// estimator and QoS controller in one loop. Every RevocableInterval the agent measures
// its pods, reports what the non-revocable ones use (the scheduler lends the idle rest
// of their reservations, v4.Lent), and evicts a revocable task group when the revocable
// ones no longer fit in what the node can lend now, or when the node's measured memory
// passes the safe share of its allocatable. The agent decides, not the server: it
// measures, it acts within one interval, and it still protects the owners while no
// server answers.

// Defaults of the revocable tier's loop.
const (
	DefaultRevocableInterval      = 10 * time.Second
	DefaultRevocableEvictInterval = 30 * time.Second
	// revocableResend is how often an unchanged report is sent again, so that the
	// server's stays fresher than v4.RevocableStale.
	revocableResend = v4.RevocableStale / 3
)

// revPod is one pod as the eviction weighs it.
type revPod struct {
	key       string // namespace/name
	revocable bool
	priority  int
	since     time.Time
	reserved  v4.NodeResources
	use       podUse
}

// revState is the node's pods, its allocatable and the operator's bounds.
type revState struct {
	alloc               v4.NodeResources
	margin, maxFraction float64
	pods                []revPod
}

// used is what the non-revocable (rev false) or revocable (true) pods use: a pod that
// could not be measured counts its reservation, so a failing measure never lends more.
func (s *revState) used(rev bool) (cpu, memMB float64) {
	for _, p := range s.pods {
		if p.revocable != rev {
			continue
		}
		if p.use.unmeasured {
			cpu, memMB = cpu+p.reserved.CPU, memMB+p.reserved.MemoryMB
			continue
		}
		cpu, memMB = cpu+p.use.cores, memMB+float64(p.use.memory)/(1<<20)
	}
	return cpu, memMB
}

// reserved is what the non-revocable or revocable pods reserve.
func (s *revState) reserved(rev bool) (cpu, memMB float64) {
	for _, p := range s.pods {
		if p.revocable == rev {
			cpu, memMB = cpu+p.reserved.CPU, memMB+p.reserved.MemoryMB
		}
	}
	return cpu, memMB
}

// report is the node's lending report.
func (s *revState) report(now time.Time, evictions int) v4.RevocableStatus {
	cpu, mem := s.used(false)
	rcpu, rmem := s.used(true)
	return v4.RevocableStatus{Time: now.UTC(), UsedCPU: round2(cpu), UsedMemoryMB: math.Round(mem), RevocableCPU: round2(rcpu),
		RevocableMemoryMB: math.Round(rmem), MaxFraction: s.maxFraction, Margin: s.margin, Evictions: evictions}
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// victim is the revocable pod to evict now, with why, or "" when the revocable ones fit:
// in the room the node lends (free plus v4.Lent, as the scheduler counts it) and, for
// memory, under the safe share of the allocatable. The lowest priority goes first, then
// the one that started last (it loses the least work).
func (s *revState) victim() (string, string) {
	resCPU, resMem := s.reserved(false)
	useCPU, useMem := s.used(false)
	revCPU, revMem := s.reserved(true)
	_, revUseMem := s.used(true)
	roomCPU := max(0, s.alloc.CPU-resCPU) + v4.Lent(s.alloc.CPU, resCPU, useCPU, s.margin, s.maxFraction)
	roomMem := max(0, s.alloc.MemoryMB-resMem) + v4.Lent(s.alloc.MemoryMB, resMem, useMem, s.margin, s.maxFraction)
	safeMem := (1 - s.margin) * s.alloc.MemoryMB
	var why string
	switch {
	case revMem > roomMem+0.5:
		why = fmt.Sprintf("the owners use %.0f MB of their %.0f MB reserved: the node lends %.0f MB, its revocable task groups reserve %.0f MB", useMem, resMem, roomMem, revMem)
	case revCPU > roomCPU+0.005:
		why = fmt.Sprintf("the owners use %.2f of their %.2f cores reserved: the node lends %.2f cores, its revocable task groups reserve %.2f", useCPU, resCPU, roomCPU, revCPU)
	case useMem+revUseMem > safeMem:
		why = fmt.Sprintf("the node's task groups use %.0f MB, above the safe %.0f MB (%.0f%% of %.0f MB allocatable)", useMem+revUseMem, safeMem, 100*(1-s.margin), s.alloc.MemoryMB)
	default:
		return "", ""
	}
	var cands []revPod
	for _, p := range s.pods {
		if p.revocable {
			cands = append(cands, p)
		}
	}
	if len(cands) == 0 {
		return "", ""
	}
	slices.SortFunc(cands, func(a, b revPod) int {
		return cmp.Or(cmp.Compare(a.priority, b.priority), b.since.Compare(a.since), cmp.Compare(a.key, b.key))
	})
	return cands[0].key, why
}

// revEvictor paces evictions: at most one per every, however many the node needs.
type revEvictor struct {
	every time.Duration
	evict func(ns, name, why string) bool // the executor's Evict
	last  time.Time
	count int
}

// step evicts st's victim, if any, unless the last eviction is more recent than every.
func (e *revEvictor) step(st *revState, now time.Time) {
	if !e.last.IsZero() && now.Sub(e.last) < e.every {
		return
	}
	key, why := st.victim()
	if key == "" {
		return
	}
	ns, name := splitKey(key)
	if e.evict(ns, name, "revocable: "+why) {
		e.last = now
		e.count++
	}
}

// revocableLoop measures, reports and evicts every RevocableInterval until ctx ends.
func (a *Agent) revocableLoop(ctx context.Context) {
	t := time.NewTicker(a.cfg.RevocableInterval)
	defer t.Stop()
	var sent v4.RevocableStatus
	ev := &revEvictor{every: a.cfg.RevocableEvictInterval, evict: a.exec.Evict}
	alloc, err := Capacity(a.cfg.DataDir)
	if err != nil {
		a.log.Warn("the revocable tier sees incomplete node resources", "err", err)
	}
	alloc = Allocatable(alloc)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, now := a.revocableState(ctx, alloc)
		if now.IsZero() {
			continue
		}
		ev.step(st, now)
		rep := st.report(now, ev.count)
		if rep.MaxFraction == 0 && sent.Time.IsZero() {
			continue // lending is off: no report, the scheduler lends nothing here
		}
		if !changedReport(sent, rep, st.alloc) {
			continue
		}
		err := a.servers.do(ctx, func(c *client.Client) error { return c.AgentRevocable(ctx, a.cfg.NodeName, rep) })
		if err != nil {
			if ctx.Err() == nil {
				a.log.Warn("cannot report the node's revocable capacity; will retry", "err", err)
			}
			continue
		}
		sent = rep
		a.revocableSent.Store(&rep)
	}
}

// changedReport: a report is sent when it moved by more than 2% of the node, when its
// evictions or bounds changed, or when the last one sent grows old.
func changedReport(sent, rep v4.RevocableStatus, alloc v4.NodeResources) bool {
	far := func(a, b, of float64) bool { return math.Abs(a-b) > 0.02*of }
	return rep.Time.Sub(sent.Time) >= revocableResend || sent.Evictions != rep.Evictions ||
		sent.Margin != rep.Margin || sent.MaxFraction != rep.MaxFraction ||
		far(sent.UsedCPU, rep.UsedCPU, alloc.CPU) || far(sent.UsedMemoryMB, rep.UsedMemoryMB, alloc.MemoryMB) ||
		far(sent.RevocableCPU, rep.RevocableCPU, alloc.CPU) || far(sent.RevocableMemoryMB, rep.RevocableMemoryMB, alloc.MemoryMB)
}

// revocableState measures the pods the node runs and pairs them with what their
// checkpoint entries recorded; a zero time when nothing could be sampled.
func (a *Agent) revocableState(ctx context.Context, alloc v4.NodeResources) (*revState, time.Time) {
	uses, at := a.nodeUsage.podUses(ctx)
	if at.IsZero() {
		return nil, at
	}
	st := &revState{alloc: alloc, margin: a.cfg.RevocableMargin, maxFraction: a.cfg.RevocableMaxFraction}
	for _, p := range a.exec.List() {
		if v4.Terminal(p.Status.Phase) {
			continue
		}
		key := tgKey(p.Namespace, p.Name)
		e, ok := a.ckpt.get(key)
		if !ok {
			continue
		}
		use, measured := uses[key]
		if !measured {
			use.unmeasured = true
		}
		st.pods = append(st.pods, revPod{key: key, revocable: e.Revocable, priority: e.Priority, since: e.Since,
			reserved: e.Resources, use: use})
	}
	return st, at
}
