package gpu

import (
	"context"
	"fmt"
	"slices"
	"sync"

	v4 "github.com/berthhq/berth/api/v4"
)

// Fake is a made-up set of cards for tests and simulated nodes: what Cards returns is set
// with SetCards, and Fail sends a health event.
type Fake struct {
	mu     sync.Mutex
	cards  []v4.NodeGPU
	events chan [2]string
}

// NewFake returns a source of the given cards.
func NewFake(cards []v4.NodeGPU) *Fake {
	return &Fake{cards: cards, events: make(chan [2]string, 16)}
}

// FakeCards makes n cards of a model with memMiB each, wired as NVLink pairs, the pairs
// of each half behind one PCIe switch, the halves on two CPUs (NUMA nodes 0 and 1).
func FakeCards(prefix string, n int, model string, memMiB int) []v4.NodeGPU {
	uuid := func(i int) string { return fmt.Sprintf("GPU-%s-%d", prefix, i) }
	cards := make([]v4.NodeGPU, n)
	for i := range cards {
		c := v4.NodeGPU{UUID: uuid(i), Index: i, Minor: i, Model: model, MemoryMiB: memMiB,
			PCIBusID: fmt.Sprintf("0000:%02x:00.0", 0x07+i), NUMANode: i * 2 / max(n, 1)}
		for j := range n {
			level := v4.GPULinkCrossCPU
			switch {
			case j == i:
				continue
			case j/2 == i/2:
				level = v4.GPULinkNVLink
			case j*2/n == i*2/n:
				level = v4.GPULinkPCIeSwitch
			}
			c.Links = append(c.Links, v4.GPULink{UUID: uuid(j), Level: level})
		}
		cards[i] = c
	}
	return cards
}

// SetCards changes what the next Cards returns.
func (f *Fake) SetCards(cards []v4.NodeGPU) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cards = cards
}

// Fail reports a card unhealthy through WatchHealth.
func (f *Fake) Fail(uuid, reason string) { f.events <- [2]string{uuid, reason} }

// Cards returns a copy of the cards.
func (f *Fake) Cards() ([]v4.NodeGPU, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Clone(f.cards)
	for i := range out {
		out[i].Links = slices.Clone(out[i].Links)
	}
	return out, nil
}

// WatchHealth delivers the Fail calls until ctx ends.
func (f *Fake) WatchHealth(ctx context.Context, unhealthy func(uuid, reason string)) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-f.events:
			unhealthy(e[0], e[1])
		}
	}
}

// Close does nothing.
func (f *Fake) Close() error { return nil }

var _ Source = (*Fake)(nil)
