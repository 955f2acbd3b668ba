package sim

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/agent"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/ctxtime"
	"github.com/berthhq/berth/internal/pki"
)

// A light node speaks the agent protocol (docs/agent.md) with the agent's own client
// calls (internal/client; its watch reads only what it uses, node_watch.go) and keeps
// only what the protocol needs: its certificate, its task groups' statuses and their
// timers. It joins with the join token (the CA pinned), registers over mTLS, beats on a
// heartbeat stream, lists and watches its task groups, and reports their statuses
// (batched, as the agent's reporter does) and its periodic reports, on the three
// connections an agent holds. What a whole agent adds (an executor, a data dir, a local
// API, drivers, metrics) costs the simulator, not the server: a thousand agents in one
// process took more than a core before the server did any work.
type lightNode struct {
	s     *Sim
	name  string
	index int // among the simulator's nodes
	log   *slog.Logger
	api   *client.Client // the node's mTLS client, set once it joined
	hc    *http.Client   // its HTTP client (the watch)

	ready     chan struct{}
	readyOnce sync.Once
	// reopen asks beatLoop for a new heartbeat stream (the scheduler found none usable);
	// periodic asks reportLoop for a periodic report.
	reopen, periodic chan struct{}
	// stream is the open heartbeat stream; streamMu keeps Beat (the scheduler) and
	// Close (beatLoop) apart, as HeartbeatStream wants them on one goroutine.
	streamMu sync.Mutex
	stream   *client.HeartbeatStream
	lastBeat time.Time // when the scheduler last sent a beat on stream (streamMu)
	stopped  atomic.Bool

	mu  sync.Mutex
	tgs map[string]*simTaskGroup // by namespace/name
	rep reports
}

// simTaskGroup is a task group a light node runs.
type simTaskGroup struct {
	ns, name string
	names    []string // its tasks
	status   v4.TaskGroupStatus
	started  bool        // status holds a status to report
	ended    bool        // its tasks ended (terminal status)
	version  uint64      // counts its status changes
	timer    *time.Timer // its next change (start, exit), when one is due
	step     *v4.StepIO  // a workflow step's I/O, nil for other task groups
}

func newLightNode(s *Sim, index int, name string) *lightNode {
	n := &lightNode{s: s, name: name, index: index, log: s.agentLog.With("node", name), ready: make(chan struct{}),
		reopen: make(chan struct{}, 1), periodic: make(chan struct{}, 1), tgs: map[string]*simTaskGroup{}}
	n.rep.status = n.newReporter()
	return n
}

func (n *lightNode) NodeName() string       { return n.name }
func (n *lightNode) Ready() <-chan struct{} { return n.ready }
func (n *lightNode) markReady()             { n.readyOnce.Do(func() { close(n.ready) }) }
func tgKey(ns, name string) string          { return ns + "/" + name }
func (n *lightNode) errorf(f string, a ...any) error {
	return fmt.Errorf("node %s: "+f, append([]any{n.name}, a...)...)
}

// Run joins, registers and then beats, watches and reports until ctx ends. It fails only
// when the server refuses the join.
func (n *lightNode) Run(ctx context.Context) error {
	defer n.stopped.Store(true)
	if err := n.join(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if !n.register(ctx) {
		return nil
	}
	n.markReady()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { n.watchLoop(ctx) })
	wg.Go(func() { n.reportLoop(ctx) })
	n.s.beats.add(n)
	n.beatLoop(ctx)
	n.stopTimers()
	return nil
}

// join exchanges the join token for the node's certificate over the simulator's shared
// join client, and builds the node's mTLS client.
func (n *lightNode) join(ctx context.Context) error {
	csr, keyPEM, err := pki.NewCSR(n.name)
	if err != nil {
		return n.errorf("%w", err)
	}
	bo := ctxtime.NewBackoff(500*time.Millisecond, 15*time.Second)
	var ans *v4.AgentCertificate
	for {
		r, err := n.s.joiner.AgentCertificate(ctx, n.name, csr)
		if err == nil {
			ans = r
			break
		}
		if st := client.StatusOf(err); st == http.StatusBadRequest || st == http.StatusUnauthorized || st == http.StatusForbidden || st == http.StatusConflict {
			return n.errorf("the server refused the join: %w", err)
		}
		if _, untrusted := errors.AsType[*client.UntrustedError](err); untrusted {
			return n.errorf("%w", err)
		}
		n.log.Warn("cannot join yet; will retry", "err", err)
		if !sleep(ctx, bo.Next()) {
			return ctx.Err()
		}
	}
	cert, err := tls.X509KeyPair([]byte(ans.Certificate), keyPEM)
	if err != nil {
		return n.errorf("the node certificate: %w", err)
	}
	roots, err := n.s.serverRoots([]byte(ans.CA))
	if err != nil {
		return n.errorf("%w", err)
	}
	// As the agent's: one HTTP/2 connection carrying the watch, the heartbeat stream and
	// the calls (docs/agent.md). TLS sessions are resumed when it is opened again.
	hc := client.MultiplexedHTTPClient(pki.Hardened(&tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert},
		ClientSessionCache: tls.NewLRUClientSessionCache(4)}))
	t := hc.Transport.(*http.Transport)
	t.ResponseHeaderTimeout, t.IdleConnTimeout = 30*time.Second, 6*time.Minute
	if n.s.loopback {
		// Each node its own source address, as each agent its own machine: the server
		// limits the connections of one source (--max-connections-per-source).
		d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, LocalAddr: &net.TCPAddr{IP: n.sourceIP()}}
		t.DialContext = d.DialContext
	}
	n.hc = hc
	n.api, err = client.New(strings.Join(n.s.cfg.ServerURLs, ","), client.WithHTTPClient(hc), client.WithUserAgent("berth-agent/"+agent.Version))
	if err != nil {
		return n.errorf("%w", err)
	}
	return nil
}

// sourceIP is the node's loopback address, 127.1.0.0 and up by its index.
func (n *lightNode) sourceIP() net.IP {
	i := n.index
	return net.IPv4(127, byte(1+i>>16), byte(i>>8), byte(i))
}

// register registers the node, retrying until it succeeds or ctx ends (false).
func (n *lightNode) register(ctx context.Context) bool {
	bo := ctxtime.NewBackoff(500*time.Millisecond, 30*time.Second)
	for {
		_, err := n.api.AgentRegister(ctx, n.s.nodeObject(n.name))
		if err == nil {
			return true
		}
		n.log.Warn("cannot register the node; will retry", "err", err)
		if !sleep(ctx, bo.Next()) {
			return false
		}
	}
}

// beat sends one beat (the beat scheduler calls it every round); it never waits on the
// network. A stream that failed, or none, asks beatLoop for another. As an agent, the
// node beats at the interval its server asks for: it skips the rounds that come before
// that interval is due (beatDue).
func (n *lightNode) beat(round time.Duration) {
	n.streamMu.Lock()
	if n.stopped.Load() { // under the lock: halt reads the last beat after it set stopped
		n.streamMu.Unlock()
		return
	}
	ok := n.stream != nil
	if now := time.Now(); ok && beatDue(now.Sub(n.lastBeat), round, n.stream.Interval()) {
		ok = n.stream.Beat(v4.AgentHeartbeat{}) == nil
		n.lastBeat = now
	}
	n.streamMu.Unlock()
	if !ok {
		select {
		case n.reopen <- struct{}{}:
		default:
		}
	}
}

// beatDue reports whether a node whose last beat was since ago, beaten at by a scheduler
// whose rounds come every round, beats now when its server asks for interval (0: none,
// every round): it beats when waiting one more round would leave a gap over interval, so
// its beats come at most interval apart, in whole rounds.
func beatDue(since, round, interval time.Duration) bool {
	return since > interval-round // not since+round: since the zero time saturates
}

// beatLoop opens the heartbeat stream at once and again whenever beat asks, until ctx
// ends. A stream's first beat says the agent's version and is awaited, as the agent's.
func (n *lightNode) beatLoop(ctx context.Context) {
	defer n.swapStream(nil)
	select { // the scheduler may have asked already
	case n.reopen <- struct{}{}:
	default:
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.reopen:
		}
		n.swapStream(nil)
		st, err := n.api.AgentHeartbeats(ctx, n.name)
		var sent time.Time
		if err == nil {
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			sent = time.Now()
			err = st.BeatAndWait(wctx, v4.AgentHeartbeat{AgentVersion: agent.Version})
			cancel()
			if err != nil {
				st.Close()
			}
		}
		switch {
		case err == nil:
			n.swapStream(st)
			n.noteBeat(sent) // a stream's first beat is a beat too: the node's TTL runs from it
		case ctx.Err() != nil:
			return
		case client.IsNotFound(err):
			n.log.Warn("the node was deleted on the server; registering it again")
			if !n.register(ctx) {
				return
			}
		default:
			n.log.Warn("heartbeat failed", "err", err)
		}
	}
}

// noteBeat records a beat sent at t, unless a later one was.
func (n *lightNode) noteBeat(t time.Time) {
	n.streamMu.Lock()
	if t.After(n.lastBeat) {
		n.lastBeat = t
	}
	n.streamMu.Unlock()
}

// swapStream makes st the node's stream and closes the one before.
func (n *lightNode) swapStream(st *client.HeartbeatStream) {
	n.streamMu.Lock()
	old := n.stream
	n.stream = st
	n.streamMu.Unlock()
	if old != nil {
		old.Close()
	}
}

// halt stops the node's beats at once (it froze) and says when the last one left and
// the interval its server had told it (0: none).
func (n *lightNode) halt() (lastBeat time.Time, interval time.Duration) {
	n.streamMu.Lock()
	defer n.streamMu.Unlock()
	n.stopped.Store(true)
	if n.stream != nil {
		interval = n.stream.Interval()
	}
	return n.lastBeat, interval
}

// stopTimers stops every pending start or exit (the node stopped or froze).
func (n *lightNode) stopTimers() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, t := range n.tgs {
		if t.timer != nil {
			t.timer.Stop()
		}
	}
}
