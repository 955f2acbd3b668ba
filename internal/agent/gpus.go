package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/devices/gpu"
)

// The node's GPUs (docs/gpus.md): the agent fingerprints its cards at start, reports them
// with the node, watches their health, and fingerprints again every gpuRefreshInterval.
// A card that turns unhealthy stays so until the agent restarts (a card with a critical
// XID error needs a reset); a change registers the node again, so the scheduler stops
// placing on the card, and marks the task groups that hold it.

// GPU modes (Config.GPUs).
const (
	GPUAuto = "auto" // the cards NVML finds; none without the library
	GPUOff  = "off"  // report no cards
)

// gpuRefreshInterval is how often the cards are fingerprinted again: a card that fell off
// the bus may send no event.
const gpuRefreshInterval = time.Minute

// gpuWatchRetry is the pause before health events are watched again after a failure.
const gpuWatchRetry = 30 * time.Second

// gpuInventory is the node's cards as last fingerprinted, with the cards marked unhealthy
// since.
type gpuInventory struct {
	src     gpu.Source // nil: no cards
	sharing string     // the node's GPU sharing mode (the gpu.sharing attribute)

	mu        sync.Mutex
	cards     []v4.NodeGPU
	unhealthy map[string]string // UUID -> why
}

// openGPUs opens the cards' source for the mode: the configured one (tests), NVML, or
// none. A machine without NVML has no cards; that is not an error.
func openGPUs(cfg Config, log logger) *gpuInventory {
	inv := &gpuInventory{unhealthy: map[string]string{}, sharing: cfg.GPUSharing}
	switch {
	case cfg.GPUs == GPUOff:
		return inv
	case cfg.GPUSource != nil:
		inv.src = cfg.GPUSource
	default:
		src, err := gpu.OpenNVML(nil, "/sys")
		if err != nil {
			if !errors.Is(err, gpu.ErrNoLibrary) {
				log.Warn("cannot read the node's GPUs; it reports none", "err", err)
			}
			return inv
		}
		inv.src = src
	}
	if _, err := inv.refresh(); err != nil {
		log.Warn("cannot fingerprint the node's GPUs; it reports none until the next try", "err", err)
	}
	return inv
}

// close releases the source (not one a test gave).
func (g *gpuInventory) close(cfg Config) {
	if g.src != nil && cfg.GPUSource == nil {
		g.src.Close()
	}
}

// refresh fingerprints the cards again and reports whether what the node reports changed.
func (g *gpuInventory) refresh() (bool, error) {
	if g.src == nil {
		return false, nil
	}
	cards, err := g.src.Cards()
	if err != nil {
		return false, fmt.Errorf("fingerprint the GPUs: %w", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	before := g.currentLocked()
	g.cards = cards
	return !gpusEqual(before, g.currentLocked()), nil
}

// markUnhealthy records a card's failure and reports whether it is news.
func (g *gpuInventory) markUnhealthy(uuid, why string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, known := g.unhealthy[uuid]; known {
		return false
	}
	g.unhealthy[uuid] = why
	return true
}

// Card returns the card with the UUID (for the executor: a task's cards).
func (g *gpuInventory) Card(uuid string) (v4.NodeGPU, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.cards {
		if c.UUID == uuid {
			return c, true
		}
	}
	return v4.NodeGPU{}, false
}

// Any reports whether the node has cards.
func (g *gpuInventory) Any() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.cards) > 0
}

// current returns the cards as the node reports them.
func (g *gpuInventory) current() []v4.NodeGPU {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.currentLocked()
}

func (g *gpuInventory) currentLocked() []v4.NodeGPU {
	out := make([]v4.NodeGPU, len(g.cards))
	for i, c := range g.cards {
		c.Links = slices.Clone(c.Links)
		if why := g.unhealthy[c.UUID]; why != "" && c.Unhealthy == "" {
			c.Unhealthy = why
		}
		out[i] = c
	}
	return out
}

func gpusEqual(a, b []v4.NodeGPU) bool {
	return slices.EqualFunc(a, b, func(x, y v4.NodeGPU) bool {
		return x.UUID == y.UUID && x.Index == y.Index && x.Minor == y.Minor && x.Model == y.Model &&
			x.MemoryMiB == y.MemoryMiB && x.PCIBusID == y.PCIBusID && x.NUMANode == y.NUMANode &&
			x.MIG == y.MIG && x.Unhealthy == y.Unhealthy && slices.Equal(x.Links, y.Links)
	})
}

// describeNode adds the cards to the node the agent registers: the inventory, the
// healthy cards as the nvidia.com/gpu resource, and the attributes gpu.count and
// gpu.model that constraints match (text when every card is the same model; gpu.models
// is the set of models).
func (g *gpuInventory) describeNode(n *v4.Node) {
	cards := g.current()
	if len(cards) == 0 {
		return
	}
	n.Spec.GPUs = cards
	healthy := 0
	var models []string
	for _, c := range cards {
		if c.Unhealthy == "" {
			healthy++
		}
		if !slices.Contains(models, c.Model) {
			models = append(models, c.Model)
		}
	}
	setExtended(&n.Spec.Capacity, v4.ResourceGPU, float64(len(cards)))
	setExtended(&n.Spec.Allocatable, v4.ResourceGPU, float64(healthy))
	a := &n.Spec.Attributes
	if a.Scalar == nil {
		a.Scalar = map[string]float64{}
	}
	a.Scalar["gpu.count"] = float64(len(cards))
	if a.Set == nil {
		a.Set = map[string][]string{}
	}
	slices.Sort(models)
	a.Set["gpu.models"] = models
	if a.Text == nil {
		a.Text = map[string]string{}
	}
	if len(models) == 1 {
		a.Text["gpu.model"] = models[0]
	}
	a.Text["gpu.sharing"] = g.sharing
}

func setExtended(r *v4.NodeResources, name string, v float64) {
	if r.Extended == nil {
		r.Extended = map[string]float64{}
	}
	r.Extended[name] = v
}

// problemOf says which of a task group's cards are unhealthy, or "".
func (g *gpuInventory) problemOf(tg *v4.TaskGroup) string {
	if len(tg.Spec.GPUs) == 0 {
		return ""
	}
	cards := g.current()
	var problems []string
	for _, held := range tg.Spec.GPUs {
		i := slices.IndexFunc(cards, func(c v4.NodeGPU) bool { return c.UUID == held.UUID })
		var p string
		switch {
		case i < 0:
			p = fmt.Sprintf("GPU %d (%s) is gone from the node", held.Index, held.UUID)
		case cards[i].Unhealthy != "":
			p = fmt.Sprintf("GPU %d (%s) is unhealthy: %s", held.Index, held.UUID, cards[i].Unhealthy)
		default:
			continue
		}
		if !slices.Contains(problems, p) {
			problems = append(problems, p)
		}
	}
	return strings.Join(problems, "; ")
}

// gpuLoop watches the cards' health and fingerprints them again now and then; when what
// the node reports changes, it registers the node again and marks the task groups.
func (a *Agent) gpuLoop(ctx context.Context) {
	if a.gpus.src == nil {
		return
	}
	changed := make(chan struct{}, 1) // a burst of events is one change
	notify := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		for ctx.Err() == nil {
			err := a.gpus.src.WatchHealth(ctx, func(uuid, why string) {
				a.log.Error("a GPU turned unhealthy; no new work goes to it", "uuid", uuid, "reason", why)
				if a.gpus.markUnhealthy(uuid, why) {
					notify()
				}
			})
			if err == nil || ctx.Err() != nil {
				return
			}
			a.log.Warn("cannot watch the GPUs' health; will try again", "in", gpuWatchRetry, "err", err)
			if !sleep(ctx, gpuWatchRetry) {
				return
			}
		}
	})
	t := time.NewTicker(gpuRefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			news, err := a.gpus.refresh()
			if err != nil {
				a.log.Warn("cannot fingerprint the GPUs again", "err", err)
			}
			if !news {
				continue
			}
		case <-changed:
		}
		a.log.Info("the node's GPUs changed; registering the node again")
		a.nodeChanged()
	}
}

// nodeChanged asks reregisterLoop to register the node again.
func (a *Agent) nodeChanged() {
	select {
	case a.nodeChanges <- struct{}{}:
	default: // one is pending: it reads the node as it is then
	}
}

// reregisterLoop registers the node again after its cards or device plugins changed,
// and marks the task groups whose cards did.
func (a *Agent) reregisterLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.nodeChanges:
		}
		if !a.register(ctx) {
			return
		}
		a.markGPUTaskGroups()
	}
}

// markGPUTaskGroups reports again the task groups that hold a card, so their status
// carries the cards' state (reportTaskGroup adds it).
func (a *Agent) markGPUTaskGroups() {
	a.mu.Lock()
	var held []*v4.TaskGroup
	for _, tg := range a.desired {
		if len(tg.Spec.GPUs) > 0 {
			held = append(held, tg)
		}
	}
	a.mu.Unlock()
	for _, tg := range held {
		ns, name := tg.Metadata.Namespace, tg.Metadata.Name
		if st, known := a.exec.Status(ns, name); known {
			a.reportTaskGroup(ns, name, st)
		}
	}
}

// reportTaskGroup queues a task group's status, with the state of its cards.
func (a *Agent) reportTaskGroup(ns, name string, st v4.TaskGroupStatus) {
	if st.Reason == v4.ReasonPortConflict {
		a.busyPorts.taken(st.PortsTaken) // the scheduler must hear of them before the next read
	}
	a.metrics.reported(tgKey(ns, name), st.Phase)
	a.reporter.enqueue(ns, name, a.withGPUState(ns, name, st))
}

// withGPUState sets the status's GPUProblem from the cards the task group holds.
func (a *Agent) withGPUState(ns, name string, st v4.TaskGroupStatus) v4.TaskGroupStatus {
	if a.gpus == nil {
		return st
	}
	a.mu.Lock()
	tg := a.desired[tgKey(ns, name)]
	a.mu.Unlock()
	if tg != nil {
		st.GPUProblem = a.gpus.problemOf(tg)
	}
	return st
}
