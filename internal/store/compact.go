package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/berthhq/berth/api/cluster"
	"github.com/berthhq/berth/internal/bytesize"
)

// Periodic compaction, as kube-apiserver does it: every interval each server tries a
// compare-and-swap on compactKey's version, which serves as a logical clock shared by
// the servers. The one whose last seen version is still current wins and compacts etcd to
// the revision it saw at its previous attempt, one interval ago, so a watch up to one
// interval behind can still resume; the others only learn the new version and revision.
// One compaction per interval, whatever the number of servers, and when the winner stops
// another takes over at its next attempt.

// compactKey holds the last periodic compaction (a cluster.Compaction as JSON).
const compactKey = prefix + "compaction"

// compactor is one server's view of the shared clock.
type compactor struct {
	version int64 // compactKey's version last seen
	rev     int64 // etcd's revision at the last attempt: the next compaction's target
}

// compactTimeout bounds one attempt; a physical compaction of a large history takes a while.
const compactTimeout = time.Minute

// compactTick makes one attempt. It returns the revision compacted to, 0 when it was not
// this server's turn or nothing was seen an interval ago.
func (s *Store) compactTick(ctx context.Context, c *compactor) (int64, error) {
	target := c.rev
	val, err := json.Marshal(cluster.Compaction{Revision: target, Time: time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return 0, fmt.Errorf("encode compaction: %w", err)
	}
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(compactKey), "=", c.version)).
		Then(clientv3.OpPut(compactKey, string(val))).
		Else(clientv3.OpGet(compactKey)).Commit()
	if err != nil {
		return 0, fmt.Errorf("compaction turn: %w", wrapEtcd(err))
	}
	c.rev = resp.Header.Revision
	if !resp.Succeeded {
		c.version = 0 // the key was deleted
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			c.version = kvs[0].Version
		}
		return 0, nil
	}
	c.version++
	if target == 0 {
		return 0, nil
	}
	if _, err := s.client.Compact(ctx, target, clientv3.WithCompactPhysical()); err != nil {
		if errors.Is(err, rpctypes.ErrCompacted) {
			return 0, nil // a recovery compacted further meanwhile
		}
		return 0, fmt.Errorf("compact etcd to revision %d: %w", target, wrapEtcd(err))
	}
	return target, nil
}

// lastCompaction reads compactKey; nil when no server has compacted yet.
func (s *Store) lastCompaction(ctx context.Context) (*cluster.Compaction, error) {
	resp, err := s.client.Get(ctx, compactKey)
	if err != nil {
		return nil, fmt.Errorf("read the last compaction: %w", wrapEtcd(err))
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	var c cluster.Compaction
	if err := json.Unmarshal(resp.Kvs[0].Value, &c); err != nil {
		return nil, fmt.Errorf("decode the last compaction: %w", err)
	}
	if c.Revision == 0 {
		return nil, nil // only the first turn, nothing compacted
	}
	return &c, nil
}

// runCompactor compacts every interval until ctx ends, then checks whether the embedded
// member is worth defragmenting. The first attempt is at once: it records the revision
// the attempt one interval later compacts to.
func (s *Store) runCompactor(ctx context.Context, interval time.Duration) {
	var c compactor
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		actx, cancel := context.WithTimeout(ctx, compactTimeout)
		rev, err := s.compactTick(actx, &c)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, ErrNoSpace):
			s.log.Debug("periodic compaction skipped: etcd is out of space (the NOSPACE watch recovers)")
		case err != nil:
			s.log.Warn("periodic compaction failed", "err", err)
		case rev > 0:
			s.log.Info("compacted etcd history", "revision", rev, "interval", interval)
		}
		s.maybeDefragment(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Defragmentation blocks the member (reads and writes) while it rewrites its file, so
// the compactor does it rarely: only for the embedded member of this server, only when
// the free pages are many, and at most once per defragGap unless the file nears the
// quota (a full file refuses writes; free pages count against the quota).
const (
	defragMinFree = 100 << 20
	defragGap     = time.Hour
	defragTimeout = 5 * time.Minute
	// nearQuota is the share of the quota past which the gap is waived.
	nearQuota = 0.8
)

// worthDefragmenting decides from a member's sizes and the last defragmentation.
func worthDefragmenting(m memberSizes, last, now time.Time) bool {
	free := m.Size - m.InUse
	near := float64(m.Size) >= nearQuota*float64(m.Quota)
	// 100 MiB free, or half of a file that has grown past a quarter of the quota.
	worth := free >= defragMinFree || (free*2 >= m.Size && m.Size*4 >= m.Quota)
	if near {
		// Near the quota even a tenth of it is worth having back.
		worth = worth || free*10 >= m.Quota
	}
	return worth && (near || last.IsZero() || now.Sub(last) >= defragGap)
}

// maybeDefragment defragments the embedded member when worthDefragmenting says so.
func (s *Store) maybeDefragment(ctx context.Context) {
	if s.self == "" {
		return // an external cluster is its operator's to defragment (or berth cluster recover)
	}
	sctx, cancel := context.WithTimeout(ctx, memberStatusTimeout)
	st, err := s.admin.Status(sctx, s.self)
	cancel()
	if err != nil {
		s.log.Warn("cannot read this etcd member's status", "err", err)
		return
	}
	s.space.mu.Lock()
	last := s.space.lastDefrag
	s.space.mu.Unlock()
	if !worthDefragmenting(statusSizes(st), last, time.Now()) {
		return
	}
	if _, _, err := s.defragment(ctx, s.self, true); err != nil {
		s.log.Warn("defragmentation failed", "err", err)
	}
}

// defragment defragments the member at endpoint (self: this server's embedded one) and
// returns its sizes before and after.
func (s *Store) defragment(ctx context.Context, endpoint string, self bool) (before, after memberSizes, err error) {
	s.space.defragMu.Lock()
	defer s.space.defragMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, defragTimeout)
	defer cancel()
	st, err := s.admin.Status(ctx, endpoint)
	if err != nil {
		return before, after, fmt.Errorf("status of etcd member %s: %w", endpoint, wrapEtcd(err))
	}
	before = statusSizes(st)
	start := time.Now()
	if _, err := s.admin.Defragment(ctx, endpoint); err != nil {
		return before, after, fmt.Errorf("defragment etcd member %s: %w", endpoint, wrapEtcd(err))
	}
	took := time.Since(start)
	if self {
		s.space.mu.Lock()
		s.space.lastDefrag = time.Now()
		s.space.mu.Unlock()
	}
	st, err = s.admin.Status(ctx, endpoint)
	if err != nil {
		return before, after, fmt.Errorf("status of etcd member %s: %w", endpoint, wrapEtcd(err))
	}
	after = statusSizes(st)
	s.log.Info("defragmented etcd member", "endpoint", endpoint, "took", took.Round(time.Millisecond),
		"sizeBefore", bytesize.Format(before.Size), "sizeAfter", bytesize.Format(after.Size), "inUse", bytesize.Format(after.InUse))
	return before, after, nil
}

// background owns the store's goroutines: the compactor, the NOSPACE watch, the event
// writer and the renewal of the embedded member's certificates.
type background struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startBackground starts the compactor (when interval > 0), the NOSPACE watch, the
// event writer and the lease renewal rounds.
func (s *Store) startBackground(interval time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	s.background.cancel = cancel
	if interval > 0 {
		s.background.wg.Go(func() { s.runCompactor(ctx, interval) })
	}
	s.background.wg.Go(func() { s.watchSpace(ctx) })
	s.background.wg.Go(func() { s.writeQueuedEvents(ctx) })
	s.background.wg.Go(func() { s.renewAsked(ctx) })
	if s.tls != nil {
		s.background.wg.Go(func() { s.tls.run(ctx) })
	}
}

// stop ends the goroutines and waits for them; it does nothing when none was started.
func (b *background) stop() {
	if b.cancel != nil {
		b.cancel()
	}
	b.wg.Wait()
}
