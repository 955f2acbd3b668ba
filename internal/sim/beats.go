package sim

import (
	"context"
	"sync"
	"time"

	"github.com/berthhq/berth/internal/ctxtime"
)

// beatScheduler beats every light node once an interval from one goroutine and one
// ticker, the nodes spread over beatSlots slots of the interval: a ticker and a
// goroutine waking per node and beat cost the simulator more than the beats did. Every
// reportEvery rounds it asks each node for its periodic report too.
type beatScheduler struct {
	interval    time.Duration
	reportEvery int

	mu    sync.Mutex
	nodes []*lightNode
}

// beatSlots is how many times an interval the scheduler wakes.
const beatSlots = 30

func (b *beatScheduler) add(n *lightNode) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nodes = append(b.nodes, n)
}

// run beats until ctx ends.
func (b *beatScheduler) run(ctx context.Context) {
	t := time.NewTicker(max(b.interval/beatSlots, time.Millisecond))
	defer t.Stop()
	for slot := 0; ; slot++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		round, s := slot/beatSlots, slot%beatSlots
		b.mu.Lock()
		nodes := b.nodes // appended to only: the first len stay as they are
		b.mu.Unlock()
		report := b.reportEvery > 0 && round%b.reportEvery == b.reportEvery-1
		for i := s; i < len(nodes); i += beatSlots {
			n := nodes[i]
			n.beat(b.interval)
			if report {
				select {
				case n.periodic <- struct{}{}:
				default:
				}
			}
		}
	}
}

// sleep waits d or until ctx ends; it reports whether the wait was complete.
func sleep(ctx context.Context, d time.Duration) bool { return ctxtime.Sleep(ctx, d) == nil }
