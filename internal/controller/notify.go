package controller

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
)

// sentMemory is how long the IDs of handled events are kept: longer than events live in
// the store (1 h plus a minute of lease sharing), so a catch-up list never resends one.
const sentMemory = 62 * time.Minute

// NotifyController POSTs callbacks for the events notify objects subscribe to (Lain
// deployd's notifyController, which sent once and never retried: berth retries with
// backoff and records failures as events). It follows the recorded events from the start
// of its term: each is sent at most once per term, and events older than the term are
// never sent, so a new leader does not replay what its predecessor sent.
type NotifyController struct {
	store *store.Store
	// notifies is the shared cache of notify objects.
	notifies *cache.Cache
	log      *slog.Logger
	client   *http.Client
	started  time.Time
	backoff  func(attempt int) time.Duration // delay after failed attempt n (from 1)
	// subscribers checks what each notify's subscriber may receive (notify_access.go).
	subscribers *subscribers
	metrics     *Metrics
	*recorder
	guard *specGuard

	mu        sync.Mutex
	senders   map[string]*sender // by namespace/name
	sent      map[string]time.Time
	lastPrune time.Time
	spawn     func(func()) // starts a sender's goroutine, owned by Run
}

// NewNotifyController builds the controller; Run drives it.
func NewNotifyController(st *store.Store, opts Options) *NotifyController {
	opts = opts.withDefaults()
	log := opts.Logger.With("controller", "notify")
	rec := newRecorder(st, log)
	return &NotifyController{store: st, log: log, recorder: rec, guard: newSpecGuard(rec), started: time.Now(),
		subscribers: &subscribers{store: st, now: time.Now}, metrics: opts.Metrics, notifies: opts.Caches.For(v4.KindNotify),
		client:  &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		backoff: doublingBackoff(time.Second), senders: map[string]*sender{}, sent: map[string]time.Time{}}
}

// doublingBackoff waits base, 2×base, 4×base... capped at notifyMaxBackoff.
func doublingBackoff(base time.Duration) func(int) time.Duration {
	return func(attempt int) time.Duration {
		d := base
		for i := 1; i < attempt && d < notifyMaxBackoff; i++ {
			d *= 2
		}
		return min(d, notifyMaxBackoff)
	}
}

// Run follows notify objects and recorded events until ctx ends.
func (c *NotifyController) Run(ctx context.Context) error {
	var rev int64
	return loop{caches: []*cache.Cache{c.notifies},
		start: func(ctx context.Context, spawn func(func())) error {
			c.mu.Lock()
			c.spawn = spawn
			c.mu.Unlock()
			rev = c.syncNotifies(ctx) // senders exist before the first event is matched
			return nil
		},
		follow: []func(context.Context){func(ctx context.Context) { c.watchNotifies(ctx, rev) }},
		work:   c.watchEvents}.run(ctx)
}

// syncNotifies lists the notify objects from the shared cache and makes the senders
// match them; it returns the list's revision.
func (c *NotifyController) syncNotifies(ctx context.Context) int64 {
	objs, rev, _ := c.notifies.List("", "") // index "" always answers
	keep := map[string]bool{}
	for _, o := range objs {
		n := o.(*v4.Notify)
		keep[notifyKey(n)] = true
		c.upsert(ctx, n)
	}
	c.mu.Lock()
	for k, s := range c.senders {
		if !keep[k] {
			s.cancel()
			delete(c.senders, k)
		}
	}
	c.mu.Unlock()
	return rev
}

// watchNotifies keeps the senders in step with the notify objects.
func (c *NotifyController) watchNotifies(ctx context.Context, rev int64) {
	for ctx.Err() == nil {
		ch, err := c.notifies.Watch(ctx, "", "", rev)
		if err != nil { // the cache no longer holds the changes: start over from a list
			if ctx.Err() == nil {
				c.log.Debug("watch notifies; listing again", "err", err)
				sleep(ctx, time.Second)
				rev = c.syncNotifies(ctx)
			}
			continue
		}
		for ev := range ch {
			n, ok := ev.Object.(*v4.Notify)
			if !ok {
				continue
			}
			rev = ev.Revision
			if ev.Type == store.Deleted {
				c.remove(notifyKey(n))
				c.guard.forget(v4.KindNotify, n.Metadata.Namespace, n.Metadata.Name)
			} else {
				c.upsert(ctx, n)
			}
		}
	}
}

func notifyKey(n *v4.Notify) string { return n.Metadata.Namespace + "/" + n.Metadata.Name }

// upsert starts a sender for a new notify, or gives an existing one the new spec.
func (c *NotifyController) upsert(ctx context.Context, n *v4.Notify) {
	key := notifyKey(n)
	if c.guard.check(n) != "" { // stored past validation: it sends nothing until fixed
		c.remove(key)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.senders[key]; ok {
		s.setSpec(n)
		return
	}
	sctx, cancel := context.WithCancel(ctx)
	s := &sender{c: c, key: key, queue: make(chan v4.NotifyMessage, notifyQueueSize), cancel: cancel, notify: n}
	c.senders[key] = s
	c.spawn(func() { s.run(sctx) })
}

func (c *NotifyController) remove(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.senders[key]; ok {
		s.cancel()
		delete(c.senders, key)
	}
}

// watchEvents dispatches recorded events. Each watch is followed by a list that catches
// up with what was recorded before it (since the term started, or while a broken watch
// was being replaced); event IDs keep the overlap from being sent twice.
func (c *NotifyController) watchEvents(ctx context.Context) {
	for ctx.Err() == nil {
		ch, err := c.store.WatchEvents(ctx, v4.EventFilter{})
		if err != nil {
			if ctx.Err() == nil {
				c.log.Warn("watch events; retrying", "err", err)
				sleep(ctx, time.Second)
			}
			continue
		}
		c.catchUp(ctx)
		for e := range ch {
			c.handle(e.Event)
		}
	}
}

// catchUp handles the recorded events of this term a watch started too late to see.
func (c *NotifyController) catchUp(ctx context.Context) {
	events, err := c.store.ListEvents(ctx, v4.EventFilter{})
	if err != nil {
		c.log.Warn("list events to catch up", "err", err)
		return
	}
	for _, e := range events {
		c.handle(e)
	}
}

// handle queues event e on every notify that wants it, once per term.
func (c *NotifyController) handle(e v4.Event) {
	typ := notifyType(e)
	if typ == "" || e.Time.Before(c.started) {
		return
	}
	id := eventID(e)
	type target struct {
		s *sender
		m v4.NotifyMessage
	}
	var targets []target
	c.mu.Lock()
	if _, done := c.sent[id]; done {
		c.mu.Unlock()
		return
	}
	c.sent[id] = e.Time
	c.pruneSent()
	for _, s := range c.senders {
		if n := s.spec(); wants(n, typ, e) {
			targets = append(targets, target{s, notifyMessage(n, typ, e)})
		}
	}
	c.mu.Unlock()
	for _, t := range targets { // outside the lock: a full queue records an event
		t.s.enqueue(t.m)
	}
}

// pruneSent forgets event IDs older than events live (c.mu held).
func (c *NotifyController) pruneSent() {
	now := time.Now()
	if now.Sub(c.lastPrune) < time.Minute {
		return
	}
	c.lastPrune = now
	for id, t := range c.sent {
		if now.Sub(t) > sentMemory {
			delete(c.sent, id)
		}
	}
}

// failed records a NotifyFailed warning on notify n.
func (c *NotifyController) failed(n *v4.Notify, msg string) {
	c.log.Info("notify delivery failed", "notify", notifyKey(n), "msg", msg)
	c.record(v4.Event{Type: v4.EventWarning, Reason: "NotifyFailed", Kind: v4.KindNotify,
		Namespace: n.Metadata.Namespace, Name: n.Metadata.Name, Message: msg})
}
