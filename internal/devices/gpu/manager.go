package gpu

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// The node's GPUs (docs/gpus.md): the manager fingerprints the cards when it is made,
// describes them with the node, watches their health, and fingerprints again every
// refreshInterval. A card that turns unhealthy stays so until the agent restarts (a card
// with a critical XID error needs a reset); a change calls Options.Changed, so the node
// is registered again, the scheduler stops placing on the card and the task groups that
// hold it are marked. The manager also enforces shares of cards (share.go).

// GPU modes (Options.Mode).
const (
	ModeAuto = "auto" // the cards NVML finds; none without the library
	ModeOff  = "off"  // report no cards
)

// refreshInterval is how often the cards are fingerprinted again: a card that fell off
// the bus may send no event.
const refreshInterval = time.Minute

// watchRetry is the pause before health events are watched again after a failure.
const watchRetry = 30 * time.Second

// Options configure a Manager.
type Options struct {
	// Mode is ModeAuto or ModeOff; Source, when set, replaces NVML (tests give a model
	// of the cards) and is not closed by the manager.
	Mode   string
	Source Source
	// Sharing is the node's sharing mode, as resolved by SharingMode; HAMiLib and
	// VCUDADriverDir are its files; DataDir holds the MPS and vcuda directories.
	Sharing        string
	HAMiLib        string
	VCUDADriverDir string
	DataDir        string
	// PIDs lists a container's processes, for the vcuda mode's pids.config (the Docker
	// driver); nil without one.
	PIDs driver.Processes
	// Changed is called when what the node reports of its cards changed.
	Changed func()
	Logger  *slog.Logger
}

// Manager is the node's cards as last fingerprinted, with the cards marked unhealthy
// since, and the shares of them it enforces. Its methods are safe for concurrent use.
type Manager struct {
	opts Options
	src  Source // nil: no cards
	log  *slog.Logger

	mu        sync.Mutex
	cards     []v4.NodeGPU
	unhealthy map[string]string // UUID -> why

	shares *shares
}

// NewManager opens the cards' source for the mode (Options.Source, NVML, or none) and
// fingerprints them. A machine without NVML has no cards; that is not an error.
func NewManager(opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	m := &Manager{opts: opts, log: opts.Logger, unhealthy: map[string]string{}, shares: newShares(opts)}
	switch {
	case opts.Mode == ModeOff:
		return m
	case opts.Source != nil:
		m.src = opts.Source
	default:
		src, err := OpenNVML(nil, "/sys")
		if err != nil {
			if !errors.Is(err, ErrNoLibrary) {
				m.log.Warn("cannot read the node's GPUs; it reports none", "err", err)
			}
			return m
		}
		m.src = src
	}
	if _, err := m.refresh(); err != nil {
		m.log.Warn("cannot fingerprint the node's GPUs; it reports none until the next try", "err", err)
	}
	return m
}

// Close ends the shares' servers (their files stay for the next agent) and releases
// the source (not one the options gave).
func (m *Manager) Close() {
	m.shares.close()
	if m.src != nil && m.opts.Source == nil {
		m.src.Close()
	}
}

// refresh fingerprints the cards again and reports whether what the node reports changed.
func (m *Manager) refresh() (bool, error) {
	if m.src == nil {
		return false, nil
	}
	cards, err := m.src.Cards()
	if err != nil {
		return false, fmt.Errorf("fingerprint the GPUs: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	before := m.currentLocked()
	m.cards = cards
	return !cardsEqual(before, m.currentLocked()), nil
}

// markUnhealthy records a card's failure and reports whether it is news.
func (m *Manager) markUnhealthy(uuid, why string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, known := m.unhealthy[uuid]; known {
		return false
	}
	m.unhealthy[uuid] = why
	return true
}

// Card returns the card with the UUID (a task's cards).
func (m *Manager) Card(uuid string) (v4.NodeGPU, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.cards {
		if c.UUID == uuid {
			return c, true
		}
	}
	return v4.NodeGPU{}, false
}

// Any reports whether the node has cards.
func (m *Manager) Any() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.cards) > 0
}

// Inventory returns the cards as the node reports them.
func (m *Manager) Inventory() []v4.NodeGPU {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.currentLocked()
}

func (m *Manager) currentLocked() []v4.NodeGPU {
	out := make([]v4.NodeGPU, len(m.cards))
	for i, c := range m.cards {
		c.Links = slices.Clone(c.Links)
		if why := m.unhealthy[c.UUID]; why != "" && c.Unhealthy == "" {
			c.Unhealthy = why
		}
		out[i] = c
	}
	return out
}

func cardsEqual(a, b []v4.NodeGPU) bool {
	return slices.EqualFunc(a, b, func(x, y v4.NodeGPU) bool {
		return x.UUID == y.UUID && x.Index == y.Index && x.Minor == y.Minor && x.Model == y.Model &&
			x.MemoryMiB == y.MemoryMiB && x.PCIBusID == y.PCIBusID && x.NUMANode == y.NUMANode &&
			x.MIG == y.MIG && x.Unhealthy == y.Unhealthy && slices.Equal(x.Links, y.Links)
	})
}

// Problem says which of a task group's cards are unhealthy or gone, or "".
func (m *Manager) Problem(tg *v4.TaskGroup) string {
	if len(tg.Spec.GPUs) == 0 {
		return ""
	}
	// Called for every status report: the cards are read in place, not copied.
	m.mu.Lock()
	defer m.mu.Unlock()
	var problems []string
	for _, held := range tg.Spec.GPUs {
		i := slices.IndexFunc(m.cards, func(c v4.NodeGPU) bool { return c.UUID == held.UUID })
		why := ""
		if i >= 0 {
			why = cmp.Or(m.cards[i].Unhealthy, m.unhealthy[held.UUID])
		}
		var p string
		switch {
		case i < 0:
			p = fmt.Sprintf("GPU %d (%s) is gone from the node", held.Index, held.UUID)
		case why != "":
			p = fmt.Sprintf("GPU %d (%s) is unhealthy: %s", held.Index, held.UUID, why)
		default:
			continue
		}
		if !slices.Contains(problems, p) {
			problems = append(problems, p)
		}
	}
	return strings.Join(problems, "; ")
}

// Run watches the cards' health and fingerprints them again now and then until ctx
// ends; when what the node reports changes, it calls Options.Changed.
func (m *Manager) Run(ctx context.Context) error {
	if m.src == nil {
		return nil
	}
	changed := make(chan struct{}, 1) // a burst of events is one change
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { m.watchHealth(ctx, changed) })
	t := time.NewTicker(refreshInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			news, err := m.refresh()
			if err != nil {
				m.log.Warn("cannot fingerprint the GPUs again", "err", err)
			}
			if !news {
				continue
			}
		case <-changed:
		}
		m.log.Info("the node's GPUs changed; registering the node again")
		if m.opts.Changed != nil {
			m.opts.Changed()
		}
	}
}

// watchHealth follows the cards' health events until ctx ends, watching again after a
// failure; a card newly unhealthy is sent on changed (without blocking).
func (m *Manager) watchHealth(ctx context.Context, changed chan<- struct{}) {
	for ctx.Err() == nil {
		err := m.src.WatchHealth(ctx, func(uuid, why string) {
			m.log.Error("a GPU turned unhealthy; no new work goes to it", "uuid", uuid, "reason", why)
			if m.markUnhealthy(uuid, why) {
				select {
				case changed <- struct{}{}:
				default:
				}
			}
		})
		if err == nil || ctx.Err() != nil {
			return
		}
		m.log.Warn("cannot watch the GPUs' health; will try again", "in", watchRetry, "err", err)
		t := time.NewTimer(watchRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Describe adds the cards to the node the agent registers: the inventory, the healthy
// cards as the nvidia.com/gpu resource, and the attributes gpu.count and gpu.model that
// constraints match (text when every card is the same model; gpu.models is the set of
// models), with gpu.sharing, the node's sharing mode.
func (m *Manager) Describe(n *v4.Node) {
	cards := m.Inventory()
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
	a.Text["gpu.sharing"] = m.opts.Sharing
}

func setExtended(r *v4.NodeResources, name string, v float64) {
	if r.Extended == nil {
		r.Extended = map[string]float64{}
	}
	r.Extended[name] = v
}
