package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// Delivery limits of the notify controller.
const (
	notifyQueueSize   = 100         // messages waiting per notify; more are dropped
	notifyMaxBackoff  = time.Minute // cap of the doubling delay between attempts
	notifyStatusEvery = time.Second // status writes per notify are coalesced this long
	notifyBodyLimit   = 4 << 10     // bytes of an answer read (to keep the connection) and quoted
)

// sender delivers the messages of one notify object, in order, one at a time, so a
// slow or dead callback only holds up its own queue.
type sender struct {
	c      *NotifyController
	key    string // namespace/name
	queue  chan v4.NotifyMessage
	cancel context.CancelFunc

	mu       sync.Mutex
	notify   *v4.Notify // the latest spec; replaced when the object changes
	dropping bool       // the queue overflowed and has not drained since
	// unsent is the reason messages are being dropped unsent (notify_access.go), "" while
	// they are sent: each streak is logged once.
	unsent  string
	pending statusDelta
}

// statusDelta is what happened since the status was last written.
type statusDelta struct {
	delivered, failed int
	lastDelivery      *v4.NotifyDelivery
	lastFailure       *v4.NotifyDelivery
}

func (d statusDelta) empty() bool { return d.delivered == 0 && d.failed == 0 }

func (s *sender) spec() *v4.Notify {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.notify
}

func (s *sender) setSpec(n *v4.Notify) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notify = n
}

// enqueue queues m without blocking; a full queue drops it and says so once per overflow.
func (s *sender) enqueue(m v4.NotifyMessage) {
	select {
	case s.queue <- m:
		return
	default:
	}
	// The overflow is told in the notify's status and events, which its subscriber reads:
	// a message it may not receive is dropped without a word of its subject.
	ctx, cancel := context.WithTimeout(context.Background(), notifyOverflowCheck)
	reason, _, err := s.c.subscribers.mayReceive(ctx, s.spec(), m)
	cancel()
	if err != nil {
		reason = dropUnchecked
	}
	if reason != "" {
		s.c.metrics.notifyDropped(reason)
		return
	}
	s.mu.Lock()
	first := !s.dropping
	s.dropping = true
	s.pending.failed++
	s.pending.lastFailure = &v4.NotifyDelivery{Time: time.Now().UTC(), Event: m.Type, Subject: subject(m),
		Error: fmt.Sprintf("dropped: %d messages already waiting", notifyQueueSize)}
	s.mu.Unlock()
	if first {
		s.c.failed(s.spec(), fmt.Sprintf("dropping messages: %d are waiting for %s (first dropped: %s about %s)",
			notifyQueueSize, redactURL(s.spec().Spec.URL), m.Type, subject(m)))
	}
}

// run delivers queued messages until ctx ends (the term ended or the notify was deleted).
func (s *sender) run(ctx context.Context) {
	var flush <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-s.queue:
			s.deliver(ctx, m)
			if len(s.queue) == 0 {
				s.mu.Lock()
				s.dropping = false
				s.mu.Unlock()
			}
			if flush == nil {
				flush = time.After(notifyStatusEvery)
			}
		case <-flush:
			flush = nil
			s.writeStatus(ctx)
		}
	}
}

// deliver POSTs m, retrying failed attempts after 1 s, 2 s, 4 s... up to the notify's
// maxRetries; each failed attempt is a NotifyFailed event, and so is giving up.
func (s *sender) deliver(ctx context.Context, m v4.NotifyMessage) {
	body, err := json.Marshal(m)
	if err != nil { // cannot happen for this struct; never send a broken body
		s.c.log.Error("encode notify message", "err", err)
		return
	}
	for attempt := 1; ; attempt++ {
		n := s.spec() // a changed URL or header applies from the next attempt
		if !s.mayReceive(ctx, n, m) {
			return
		}
		code, err := s.c.post(ctx, n, body)
		if ctx.Err() != nil {
			return // the term ended: the next leader does not resend (docs/notify.md)
		}
		d := &v4.NotifyDelivery{Time: time.Now().UTC(), Event: m.Type, Subject: subject(m), Attempts: attempt, Code: code}
		if err == nil {
			s.mu.Lock()
			s.pending.delivered++
			s.pending.lastDelivery = d
			s.mu.Unlock()
			return
		}
		d.Error = err.Error()
		retries := v4.DefaultNotifyMaxRetries
		if n.Spec.MaxRetries != nil {
			retries = *n.Spec.MaxRetries
		}
		what := fmt.Sprintf("POST %s for %s about %s: %v", redactURL(n.Spec.URL), m.Type, subject(m), err)
		if attempt > retries {
			s.mu.Lock()
			s.pending.failed++
			s.pending.lastFailure = d
			s.mu.Unlock()
			s.c.failed(n, fmt.Sprintf("%s; gave up after %d attempts", what, attempt))
			return
		}
		delay := s.c.backoff(attempt)
		s.c.failed(n, fmt.Sprintf("%s; attempt %d of %d, retrying in %s", what, attempt, retries+1, delay))
		sleep(ctx, delay)
		if ctx.Err() != nil {
			return
		}
	}
}

// post sends body to n's URL once; any answer but 2xx is an error (redirects are not
// followed: a POST must not turn into a GET).
func (c *NotifyController) post(ctx context.Context, n *v4.Notify, body []byte) (int, error) {
	timeout := time.Duration(max(n.Spec.TimeoutSeconds, 1)) * time.Second
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.Spec.URL, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("build request: %w", err)
	}
	for k, v := range n.Spec.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "berth-notify")
	resp, err := c.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return 0, fmt.Errorf("no answer within %s", timeout)
		}
		if ue, ok := errors.AsType[*url.Error](err); ok {
			return 0, ue.Err // drop the "Post <url>:" prefix: the URL may hold a token
		}
		return 0, err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, notifyBodyLimit))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := strings.TrimSpace(string(answer))
		if len(msg) > 200 {
			msg = msg[:200] + "..."
		}
		if msg != "" {
			return resp.StatusCode, fmt.Errorf("HTTP %d: %s", resp.StatusCode, msg)
		}
		return resp.StatusCode, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return resp.StatusCode, nil
}

// writeStatus adds what happened since the last write to the notify's status.
func (s *sender) writeStatus(ctx context.Context) {
	s.mu.Lock()
	d := s.pending
	s.pending = statusDelta{}
	ns, name := s.notify.Metadata.Namespace, s.notify.Metadata.Name
	s.mu.Unlock()
	if d.empty() {
		return
	}
	for range 5 {
		obj, err := s.c.store.Get(ctx, v4.KindNotify, ns, name)
		if errors.Is(err, store.ErrNotFound) || ctx.Err() != nil {
			return
		}
		if err != nil {
			s.c.log.Warn("read notify for its status", "notify", s.key, "err", err)
			return
		}
		n := obj.(*v4.Notify)
		n.Status.Delivered += d.delivered
		n.Status.Failed += d.failed
		if d.lastDelivery != nil {
			n.Status.LastDelivery = d.lastDelivery
		}
		if d.lastFailure != nil {
			n.Status.LastFailure = d.lastFailure
		}
		err = s.c.store.Update(ctx, n, store.Raw{})
		if !errors.Is(err, store.ErrConflict) {
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				s.c.log.Warn("write notify status", "notify", s.key, "err", err)
			}
			return
		}
	}
	s.c.log.Warn("write notify status: too many concurrent writes", "notify", s.key)
}

// notifyOverflowCheck bounds the rights check of a message that overflows its queue.
const notifyOverflowCheck = 5 * time.Second

// notifyCheckTries bounds how often the subscriber's rights are read again while etcd
// does not answer, before the message is dropped unsent.
const notifyCheckTries = 5

// mayReceive checks, before an attempt, that n's subscriber may still receive m; a
// message it may not is dropped (drop). Reading the rights is tried again while etcd
// fails: a message is never sent unchecked.
func (s *sender) mayReceive(ctx context.Context, n *v4.Notify, m v4.NotifyMessage) bool {
	for try := 1; ; try++ {
		reason, why, err := s.c.subscribers.mayReceive(ctx, n, m)
		if err == nil && reason == "" {
			s.mu.Lock()
			s.unsent = ""
			s.mu.Unlock()
			return true
		}
		if err == nil {
			s.drop(n, m, reason, why)
			return false
		}
		if ctx.Err() != nil {
			return false
		}
		if try == notifyCheckTries {
			s.drop(n, m, dropUnchecked, err.Error())
			return false
		}
		s.c.log.Warn("notify: cannot read the subscriber's rights; trying again", "notify", s.key, "err", err)
		sleep(ctx, s.c.backoff(try))
	}
}

// drop discards m unsent: counted in berth_notify_dropped_total and logged once per
// streak. The operator's log says what the subscriber may not read; the notify's events
// and status, which the subscriber reads, never name the message's subject. A notify
// without a working subscriber also gets one NotifyFailed event per streak saying so.
func (s *sender) drop(n *v4.Notify, m v4.NotifyMessage, reason, why string) {
	s.c.metrics.notifyDropped(reason)
	s.mu.Lock()
	first := s.unsent != reason
	s.unsent = reason
	s.mu.Unlock()
	if !first {
		return
	}
	s.c.log.Warn("notify messages dropped unsent: the subscriber may not receive them", "notify", s.key,
		"reason", reason, "why", why, "event", m.Type, "subject", subject(m))
	if reason == dropNoSubscriber {
		s.c.failed(n, "messages are dropped unsent: "+why)
	}
}
