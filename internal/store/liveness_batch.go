package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/berthhq/berth/internal/ctxtime"
)

// A beat of a node whose lease this server knows does not wait for etcd: it asks for a
// renewal, and one goroutine renews every lease asked for since its last round, each
// lane's renewals sent together on its stream. At thousands of nodes a beat that waited
// for its own renewal cost a goroutine hand-off and a wait on etcd per beat, and a beat
// that came while etcd wrote a large transaction waited for it. A renewal lands at most
// renewRound after its beat, so a node's lease ends at most that much later than its
// last beat's; beats come every few seconds against a TTL of several.

// renewRound is how often the asked-for renewals are sent.
const renewRound = 250 * time.Millisecond

// renewTimeout bounds one round's wait for etcd's answers.
const renewTimeout = 3 * time.Second

// renewMargin is how long before its possible expiry a lease is last renewed: the time a
// renewal may take to reach etcd.
const renewMargin = time.Second

// renewQueue holds the renewals asked for since the last round, by node, and whether
// the last round failed: while renewals fail, beats fail too, so agents go to a server
// that can keep them alive.
type renewQueue struct {
	mu      sync.Mutex
	pending map[string]clientv3.LeaseID
	failed  error
}

// ask queues a renewal of node's lease and returns the error of the last round. The
// renewal is queued even then: the next round tries etcd again, and clears the error
// when it works.
func (q *renewQueue) ask(node string, id clientv3.LeaseID) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pending == nil {
		q.pending = map[string]clientv3.LeaseID{}
	}
	q.pending[node] = id
	return q.failed
}

// take returns the queued renewals and empties the queue.
func (q *renewQueue) take() map[string]clientv3.LeaseID {
	q.mu.Lock()
	defer q.mu.Unlock()
	p := q.pending
	q.pending = nil
	return p
}

// failing records the error of the last round (nil: it renewed what it was asked).
func (q *renewQueue) failing(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.failed = err
}

// renewAsked runs the renewal rounds until ctx ends.
func (s *Store) renewAsked(ctx context.Context) {
	ctxtime.Every(ctx, renewRound, func() { s.renewRoundOnce(ctx) })
}

// renewRoundOnce renews the queued leases. A lease that expired (the node was silent for
// a TTL, or was marked Lost and its lease revoked) is forgotten, so the node's next beat
// makes it alive again and Ready.
func (s *Store) renewRoundOnce(ctx context.Context) {
	asked := s.renewals.take()
	if len(asked) == 0 {
		return
	}
	// A lease that may have expired goes on the stream kept for those (renewers.risky):
	// etcd would answer it only once it revoked the lease, and hold up the renewals
	// behind it.
	sent := time.Now()
	var lanes [renewLanes][]clientv3.LeaseID
	var risky []clientv3.LeaseID
	for node, id := range asked {
		if !s.alive.fresh(node, id, sent.Add(renewMargin)) {
			risky = append(risky, id)
			continue
		}
		lane := uint64(id) % renewLanes
		lanes[lane] = append(lanes[lane], id)
	}
	rctx, cancel := context.WithTimeout(ctx, renewTimeout)
	defer cancel()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		ttls    = make(map[clientv3.LeaseID]int64, len(asked))
		lastErr error
	)
	for i := range renewLanes + 1 {
		r, ids := &s.renewer.risky, risky
		if i < renewLanes {
			r, ids = &s.renewer.lanes[i], lanes[i]
		}
		if len(ids) == 0 {
			continue
		}
		wg.Go(func() {
			got, err := r.renewAll(rctx, s.client, ids)
			mu.Lock()
			defer mu.Unlock()
			for id, ttl := range got {
				ttls[id] = ttl
			}
			if err != nil {
				lastErr = err
			}
		})
	}
	wg.Wait()
	// A renewal left unanswered is not sent again: the node's next beat asks again, and
	// a dead node's lease must not be kept alive by retries.
	unanswered := 0
	for node, id := range asked {
		ttl, ok := ttls[id]
		switch {
		case !ok:
			unanswered++
		case ttl <= 0:
			s.alive.forgetLease(node, id)
		default:
			s.alive.renewed(node, id, sent)
		}
	}
	switch {
	case lastErr == nil:
	case errors.Is(lastErr, context.DeadlineExceeded):
		// etcd is slow, or a lane waited on an expired lease (renewAll ended its stream).
		s.log.Warn("node lease renewals took too long; the next beats ask again", "unanswered", unanswered, "after", renewTimeout)
		lastErr = nil
	default:
		lastErr = fmt.Errorf("renew node leases: %w", lastErr)
		s.log.Warn("node lease renewals failed; heartbeats through this server fail until they work again",
			"unanswered", unanswered, "err", lastErr)
	}
	s.renewals.failing(lastErr)
}
