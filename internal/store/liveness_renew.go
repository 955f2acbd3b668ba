package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// renewer renews leases over one long-lived LeaseKeepAlive stream. clientv3's
// KeepAliveOnce opens a new gRPC stream for every renewal, which at thousands of
// heartbeats a second costs more than the renewal; here a beat is one message on the
// stream and one answer. etcd answers a stream's requests in order, so the answers of
// one lease come back in the order of its requests. The stream lives with the client
// (its context): a broken stream fails the waiting renewals and the next one opens
// another.
type renewer struct {
	// leases opens the stream: the embedded member's lease service in-process, or the
	// network client's (set by Open).
	leases  func() pb.LeaseClient
	sendMu  sync.Mutex // held across a Send (renew)
	mu      sync.Mutex // guards stream, cancel and waiting
	stream  pb.Lease_LeaseKeepAliveClient
	cancel  context.CancelFunc // ends stream
	waiting map[int64][]chan renewal
	// answered counts the stream's answers: a call that saw none while it waited takes
	// the stream for stuck.
	answered uint64
}

// renewLanes is how many LeaseKeepAlive streams a store renews over, each lease always on
// the same one. etcd answers one stream's renewals one after another, and a renewal waits
// for a linearizable read when etcd's raft loop is late (a write burst on a busy machine):
// one stream then renews a few leases a second, and thousands of nodes go Lost. Several
// streams wait together (etcd serves their reads with one), and answer in order per lease.
const renewLanes = 128

// renewers spreads renewals over renewLanes streams, by lease, and keeps one more stream
// for the leases that may have expired: etcd answers the renewal of an expired lease only
// once it revoked it, which under load takes seconds, and every renewal behind it on its
// stream waits as long. Those wait on their own stream.
type renewers struct {
	lanes [renewLanes]renewer
	risky renewer
}

// setLeases sets how every lane opens its stream.
func (r *renewers) setLeases(leases func() pb.LeaseClient) {
	for i := range r.lanes {
		r.lanes[i].leases = leases
	}
	r.risky.leases = leases
}

// renewRisky renews a lease that may have expired, once, on the stream kept for those,
// and returns its TTL (0: it no longer exists).
func (r *renewers) renewRisky(ctx context.Context, c *clientv3.Client, id clientv3.LeaseID) (time.Duration, error) {
	return r.risky.renew(ctx, c, id)
}

// renewal is the answer to one renewal: the lease's new TTL (0: it does not exist).
type renewal struct {
	id  int64
	ttl int64
	err error
}

// renew renews a lease once and returns its TTL (0: it no longer exists).
func (r *renewer) renew(ctx context.Context, c *clientv3.Client, id clientv3.LeaseID) (time.Duration, error) {
	got, err := r.renewAll(ctx, c, []clientv3.LeaseID{id})
	if err != nil {
		return 0, fmt.Errorf("renew lease %x: %w", int64(id), err)
	}
	return time.Duration(max(0, got[id])) * time.Second, nil
}

// renewAll renews leases once each, their requests sent together, and returns the TTL
// etcd answered for each (0: it no longer exists). On error, what was answered before it
// is returned with it. Every lease must be another.
//
// No lock is held across Send that read needs: on the embedded member's in-process stream
// a Send waits until etcd takes the request, and etcd waits until read takes its last
// answer, so a Send under r.mu deadlocked every renewal. sendMu keeps a waiter's place in
// its lease's queue in the order of the sends.
//
// etcd answers a renewal of a lease that expired only once it revoked it, and the
// renewals behind it on the stream wait as long: when ctx ends before the stream
// answered anything at all, the stream is ended (its waiters fail) and the next renewal
// opens another, so one such lease cannot hold up a lane for good. A stream that is slow
// but answers is left alone: what it answers later is dropped, and the caller asks
// again.
func (r *renewer) renewAll(ctx context.Context, c *clientv3.Client, ids []clientv3.LeaseID) (map[clientv3.LeaseID]int64, error) {
	answers := make(chan renewal, len(ids)) // every waiter of this call answers here, once
	r.sendMu.Lock()
	r.mu.Lock()
	if r.stream == nil {
		sctx, cancel := context.WithCancel(c.Ctx())
		stream, err := r.leases().LeaseKeepAlive(sctx)
		if err != nil {
			cancel()
			r.mu.Unlock()
			r.sendMu.Unlock()
			return nil, fmt.Errorf("open the lease stream: %w", wrapEtcd(err))
		}
		r.stream, r.cancel, r.waiting = stream, cancel, map[int64][]chan renewal{}
		go r.read(stream) // ends when the stream does (at the latest when the client closes)
	}
	stream := r.stream
	for _, id := range ids {
		r.waiting[int64(id)] = append(r.waiting[int64(id)], answers)
	}
	answeredBefore := r.answered
	r.mu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.stream == stream && r.answered == answeredBefore {
			r.failLocked(stream, ctx.Err())
		}
	})
	defer stop()
	var sendErr error
	for _, id := range ids {
		if sendErr = stream.Send(&pb.LeaseKeepAliveRequest{ID: int64(id)}); sendErr != nil {
			break
		}
	}
	r.sendMu.Unlock()
	if sendErr != nil {
		r.mu.Lock()
		r.failLocked(stream, sendErr)
		r.mu.Unlock()
	}
	out := make(map[clientv3.LeaseID]int64, len(ids))
	for range ids {
		select {
		case res := <-answers: // an answer, or the error of the stream's end
			if res.err != nil {
				if ctx.Err() != nil {
					return out, ctx.Err()
				}
				return out, wrapEtcd(res.err)
			}
			out[clientv3.LeaseID(res.id)] = res.ttl
		case <-ctx.Done():
			return out, ctx.Err()
		}
	}
	return out, nil
}

// read hands the stream's answers to their waiters until it breaks.
func (r *renewer) read(stream pb.Lease_LeaseKeepAliveClient) {
	for {
		resp, err := stream.Recv()
		r.mu.Lock()
		if err != nil {
			r.failLocked(stream, err)
			r.mu.Unlock()
			return
		}
		r.answered++
		if q := r.waiting[resp.ID]; len(q) > 0 {
			q[0] <- renewal{id: resp.ID, ttl: resp.TTL}
			if len(q) == 1 {
				delete(r.waiting, resp.ID)
			} else {
				r.waiting[resp.ID] = q[1:]
			}
		}
		r.mu.Unlock()
	}
}

// failLocked ends a broken stream: its waiters get err, the next renewal opens another.
// r.mu is held.
func (r *renewer) failLocked(stream pb.Lease_LeaseKeepAliveClient, err error) {
	if r.stream != stream {
		return
	}
	for _, q := range r.waiting {
		for _, ch := range q {
			ch <- renewal{err: err}
		}
	}
	r.cancel()
	r.stream, r.cancel, r.waiting = nil, nil, nil
	stream.CloseSend()
}
