package server

import (
	"container/list"
	"context"
	"errors"
	"hash/maphash"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/pki"
	"github.com/berthhq/berth/internal/prom"
	"github.com/prometheus/client_golang/prometheus"
)

// API fairness (docs/security.md, "Seats and queues"), after Kubernetes' API priority and
// fairness: every request takes one of a bounded number of seats of its class while it
// is served, so that agents, other servers and users each have a budget the others
// cannot take. A class whose seats are all taken queues its requests, a queue per flow
// (a node, a server, a user's certificate or known token, else its source), and hands each freed seat to the next
// flow in turn, so one busy user waits behind its own requests and not others'. A queue
// is bounded in length and in wait; beyond either the request gets 429 with Retry-After.
// A long-lived request (a watch, a heartbeat stream, followed logs, exec) holds its seat
// only until its answer starts: its start is bounded, its life is not counted.

// seatClass is a budget of seats.
type seatClass int

const (
	classAgents  seatClass = iota // a node's certificate
	classServers                  // a server's certificate
	classUsers                    // everything else: tokens, users' certificates, anonymous
	numClasses
)

var classNames = [numClasses]string{"agents", "servers", "users"}

func (c seatClass) String() string { return classNames[c] }

// APISeats are the seats of each class and how long a queued request may wait.
type APISeats struct {
	Agents, Servers, Users int
	// Wait bounds a request's time in its class's queue.
	Wait time.Duration
}

// Defaults sized for a server of two cores: requests mostly take milliseconds of CPU, so a
// few dozen at once keep the cores busy; agents get more, since their status reports
// wait for batched writes (a seat waiting on etcd costs no CPU, and fewer seats would
// make the batches smaller).
const (
	DefaultAgentSeats  = 256
	DefaultServerSeats = 64
	DefaultUserSeats   = 64
	DefaultSeatWait    = 10 * time.Second
	// A class queues at most queueFactor times its seats (agents agentQueueFactor, so
	// that thousands of nodes reconnecting at once are queued rather than refused), and
	// a flow at most its class's seats.
	queueFactor      = 16
	agentQueueFactor = 32
)

func (s APISeats) withDefaults() APISeats {
	if s.Agents <= 0 {
		s.Agents = DefaultAgentSeats
	}
	if s.Servers <= 0 {
		s.Servers = DefaultServerSeats
	}
	if s.Users <= 0 {
		s.Users = DefaultUserSeats
	}
	if s.Wait <= 0 {
		s.Wait = DefaultSeatWait
	}
	return s
}

// errQueueFull and errQueueWait are the two ways a class refuses a request.
var (
	errQueueFull = errors.New("its queue is full")
	errQueueWait = errors.New("it waited too long in the queue")
)

// classGate is one class's seats and its queues.
type classGate struct {
	mu               sync.Mutex
	seats, inUse     int
	queueMax         int
	flowMax          int
	queued           int
	flows            map[string]*flowQueue // flows with waiters
	turn             list.List             // the same, the one served next first
	rejected         uint64
	onChange         func(inUse, queued int) // metrics; called with mu held
	onReject         func()
	wait             time.Duration
	waitTimerForTest func() <-chan time.Time // nil: a timer of wait
}

type flowQueue struct {
	key     string
	waiters []*waiter
	turn    *list.Element // in classGate.turn
}

type waiter struct {
	ready   chan struct{}
	granted bool
}

func newClassGate(seats, queueMax int, wait time.Duration) *classGate {
	return &classGate{seats: seats, queueMax: queueMax, flowMax: seats, wait: wait, flows: map[string]*flowQueue{}}
}

// tryAcquire takes a seat if one is free and nobody queues for it.
func (c *classGate) tryAcquire() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.takeFreeLocked()
}

func (c *classGate) takeFreeLocked() bool {
	if c.inUse < c.seats && c.queued == 0 {
		c.inUse++
		c.changed()
		return true
	}
	return false
}

// acquire takes a seat for flow, waiting in flow's queue when none is free; it returns
// errQueueFull, errQueueWait or ctx's error when it gets none.
func (c *classGate) acquire(ctx context.Context, flow string) error {
	c.mu.Lock()
	if c.takeFreeLocked() {
		c.mu.Unlock()
		return nil
	}
	fq := c.flows[flow]
	if c.queued >= c.queueMax || fq != nil && len(fq.waiters) >= c.flowMax {
		c.rejected++
		if c.onReject != nil {
			c.onReject()
		}
		c.mu.Unlock()
		return errQueueFull
	}
	if fq == nil {
		fq = &flowQueue{key: flow}
		c.flows[flow] = fq
		// A new flow goes last in the turn: the ones already waiting are served first.
		fq.turn = c.turn.PushBack(fq)
	}
	w := &waiter{ready: make(chan struct{})}
	fq.waiters = append(fq.waiters, w)
	c.queued++
	c.changed()
	c.mu.Unlock()

	var expired <-chan time.Time
	if c.waitTimerForTest != nil {
		expired = c.waitTimerForTest()
	} else {
		t := time.NewTimer(c.wait)
		defer t.Stop()
		expired = t.C
	}
	err := errQueueWait
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-expired:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.granted { // the seat came as the wait ended: take it
		return nil
	}
	c.dequeue(fq, w)
	c.rejected++
	if c.onReject != nil {
		c.onReject()
	}
	c.changed()
	return err
}

// release gives a seat back, to the next flow in turn if any waits.
func (c *classGate) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inUse--
	for c.inUse < c.seats && c.queued > 0 {
		fq := c.turn.Front().Value.(*flowQueue)
		w := fq.waiters[0]
		c.turn.MoveToBack(fq.turn) // its next waiter, if any, after the other flows'
		c.dequeue(fq, w)
		c.inUse++
		w.granted = true
		close(w.ready)
	}
	c.changed()
}

// dequeue takes w out of fq's queue, and fq out of the turn once empty.
func (c *classGate) dequeue(fq *flowQueue, w *waiter) {
	for i, x := range fq.waiters {
		if x == w {
			fq.waiters = append(fq.waiters[:i], fq.waiters[i+1:]...)
			c.queued--
			break
		}
	}
	if len(fq.waiters) > 0 {
		return
	}
	delete(c.flows, fq.key)
	c.turn.Remove(fq.turn)
}

func (c *classGate) changed() {
	if c.onChange != nil {
		c.onChange(c.inUse, c.queued)
	}
}

// state reports the seats in use and the requests queued (tests, metrics).
func (c *classGate) state() (inUse, queued int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inUse, c.queued
}

// fairGate holds the classes' gates.
type fairGate struct {
	classes [numClasses]*classGate
	seed    maphash.Seed
	// knownCredential reports whether an Authorization header is a token the server
	// already verified (nil: none is). Only such a token is a flow of its own: a made-up
	// one costs nothing to vary, and would give one client as many queues, and as many
	// turns, as it sends tokens.
	knownCredential func(string) bool
}

func newFairGate(s APISeats) *fairGate {
	s = s.withDefaults()
	return &fairGate{seed: maphash.MakeSeed(), classes: [numClasses]*classGate{
		classAgents:  newClassGate(s.Agents, s.Agents*agentQueueFactor, s.Wait),
		classServers: newClassGate(s.Servers, s.Servers*queueFactor, s.Wait),
		classUsers:   newClassGate(s.Users, s.Users*queueFactor, s.Wait),
	}}
}

// classify names r's class and its flow in the class (flowOf).
func (g *fairGate) classify(r *http.Request) (seatClass, string) {
	class := classOf(r)
	return class, g.flowOf(class, r)
}

// classOf is r's class: a node's or a server's certificate, else a user.
func classOf(r *http.Request) seatClass {
	if cert := httpapi.PeerCert(r.TLS); cert != nil {
		if _, ok := pki.NodeOf(cert); ok {
			return classAgents
		}
		if pki.IsServer(cert) {
			return classServers
		}
	}
	return classUsers
}

// flowOf names r's flow in class: a node or a server by its certificate's name, a user
// by its certificate's name or by a hash of a token the server knows (never the token
// itself), else by its source. Only a request that must queue needs it.
func (g *fairGate) flowOf(class seatClass, r *http.Request) string {
	cert := httpapi.PeerCert(r.TLS)
	switch {
	case class == classAgents:
		name, _ := pki.NodeOf(cert)
		return name
	case class == classServers:
		return cert.Subject.CommonName
	case cert != nil:
		return "c:" + cert.Subject.CommonName
	}
	if auth := credentialOf(r); auth != "" && g.knownCredential != nil && g.knownCredential(auth) {
		return "t:" + strconv.FormatUint(maphash.String(g.seed, auth), 36)
	}
	return "s:" + sourceOf(r)
}

// exempt reports whether r takes no seat: the health probes, so that a load balancer
// does not take a busy server for a dead one.
func exempt(r *http.Request) bool {
	return r.Method == http.MethodGet && (r.URL.Path == "/healthz" || r.URL.Path == "/readyz")
}

// longRunning reports whether r's answer lasts as long as its client wants: its seat is
// given back once the answer starts.
func longRunning(r *http.Request) bool {
	return isStream(r) || r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/agent/nodes/") &&
		hasSuffix(r.URL.Path, "/heartbeats")
}

// handler serves next within r's class's seats.
func (g *fairGate) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if exempt(r) {
			next.ServeHTTP(w, r)
			return
		}
		class := classOf(r)
		gate := g.classes[class]
		var err error
		if !gate.tryAcquire() {
			err = gate.acquire(r.Context(), g.flowOf(class, r))
		}
		if err != nil {
			if r.Context().Err() != nil {
				return // the client left
			}
			w.Header().Set("Retry-After", "1")
			httpapi.Errors{}.Write(w, r, httpapi.Errorf(http.StatusTooManyRequests,
				"429: the server is busy with %s' requests (%d at once) and %v; retry shortly", class, gate.seats, err))
			return
		}
		if !longRunning(r) {
			defer gate.release()
			next.ServeHTTP(w, r)
			return
		}
		sw := &seatWriter{ResponseWriter: w, release: gate.release}
		defer sw.done()
		next.ServeHTTP(sw, r)
	})
}

// collectors are the classes' metrics (docs/metrics.md): the seats, those in use, the
// requests queued, and the requests refused with 429.
func (g *fairGate) collectors() []prometheus.Collector {
	seats := prom.GaugeVec("berth_api_seats", "Requests the API serves at once, by class (agents, servers, users; --api-*-seats).", "class")
	inUse := prom.GaugeVec("berth_api_seats_in_use", "Seats taken by requests being served, by class (a long-lived request's only until its answer starts).", "class")
	queued := prom.GaugeVec("berth_api_queued_requests", "Requests waiting for a seat, by class.", "class")
	rejected := prom.CounterVec("berth_api_rejected_requests_total", "Requests refused with 429 because their class's queue was full or they waited too long, by class.", "class")
	for i, c := range g.classes {
		name := seatClass(i).String()
		seats.WithLabelValues(name).Set(float64(c.seats))
		inUseC, queuedC, rejectedC := inUse.WithLabelValues(name), queued.WithLabelValues(name), rejected.WithLabelValues(name)
		rejectedC.Add(0)
		c.mu.Lock()
		c.onChange = func(n, q int) { inUseC.Set(float64(n)); queuedC.Set(float64(q)) }
		c.onReject = rejectedC.Inc
		c.changed()
		c.mu.Unlock()
	}
	return []prometheus.Collector{seats, inUse, queued, rejected}
}
