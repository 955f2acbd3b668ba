package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
)

// A key whose reconcile fails or panics is retried after a delay that doubles from
// failureBackoff up to maxFailureBackoff (docs/operations.md, Controllers and bad
// objects); a success forgets its failures. A lost write race (ErrConflict) is retried at
// once up to conflictRetries times in a row before it backs off too, so two writers
// fighting over one object cannot spin.
const (
	failureBackoff    = time.Second
	maxFailureBackoff = 5 * time.Minute
	conflictRetries   = 5
	// failuresBeforeEvent: an error that persists this many passes in a row is recorded
	// as a Warning event on the object; a single failure (etcd busy) is only logged.
	failuresBeforeEvent = 3
)

// workKey is a work queue key that can name itself in logs.
type workKey interface {
	comparable
	fmt.Stringer
}

// worker takes due keys from a queue and reconciles them, on one goroutine or several
// (the queue never hands out a key being reconciled, so one object is reconciled by one
// goroutine at a time), so one object's panic or persistent error costs only that
// object's progress: it is recovered, logged with the key, recorded as a Warning event on
// the object, and the key backs off while every other key goes on.
type worker[K workKey] struct {
	name      string // the controller's, for metrics
	metrics   *Metrics
	queue     *queue[K]
	log       *slog.Logger
	rec       *recorder
	about     func(K) v4.Event // the object a key is about (Kind, Namespace, Name)
	reconcile func(context.Context, K) (time.Duration, error)
	// failures counts the consecutive failures of a key; a key's entry goes with its
	// first success. mu guards it.
	mu       sync.Mutex
	failures map[K]int
}

// work runs a worker on n goroutines (at least one) until ctx ends. A controller whose
// reconciles of different keys are independent of each other runs several, so one
// reconcile waiting for etcd does not hold up the others.
func work[K workKey](ctx context.Context, name string, m *Metrics, n int, q *queue[K], log *slog.Logger, rec *recorder, about func(K) v4.Event,
	reconcile func(context.Context, K) (time.Duration, error)) {
	w := &worker[K]{name: name, metrics: m, queue: q, log: log, rec: rec, about: about, reconcile: reconcile, failures: map[K]int{}}
	var wg sync.WaitGroup
	for range max(n, 1) {
		wg.Go(func() { w.run(ctx) })
	}
	wg.Wait()
}

func (w *worker[K]) run(ctx context.Context) {
	for {
		key, ok := w.queue.Get(ctx)
		if !ok {
			return
		}
		start := time.Now()
		after, err := w.safeReconcile(ctx, key)
		w.queue.Done(key)
		w.metrics.observeReconcile(w.name, time.Since(start), err, w.queue.Len())
		if ctx.Err() != nil {
			return
		}
		w.settle(key, after, err)
	}
}

// panicError is a panic of a reconcile, recovered.
type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v", p.value) }

// safeReconcile runs reconcile, turning a panic into a panicError.
func (w *worker[K]) safeReconcile(ctx context.Context, key K) (after time.Duration, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return w.reconcile(ctx, key)
}

// settle queues key again according to the outcome of its reconcile.
func (w *worker[K]) settle(key K, after time.Duration, err error) {
	w.mu.Lock()
	n := w.failures[key]
	if err == nil {
		delete(w.failures, key)
	} else {
		n++
		w.failures[key] = n
	}
	w.mu.Unlock()
	if err == nil {
		if n > 0 {
			w.rec.forget(failureEventID(key))
		}
		if after > 0 {
			w.queue.AddAfter(key, after)
		}
		return
	}
	_, panicked := errors.AsType[*panicError](err)
	if errors.Is(err, store.ErrConflict) && n <= conflictRetries {
		w.queue.Add(key)
		return
	}
	delay := failureDelay(n)
	if pe, ok := errors.AsType[*panicError](err); ok {
		w.log.Error("reconcile panicked; backing off", "key", key.String(), "failures", n, "retry", delay, "err", err, "stack", string(pe.stack))
	} else {
		w.log.Warn("reconcile failed; backing off", "key", key.String(), "failures", n, "retry", delay, "err", err)
	}
	if panicked || n >= failuresBeforeEvent {
		reason := "ReconcileFailed"
		if panicked {
			reason = "ReconcilePanic"
		}
		ev := w.about(key)
		ev.Type, ev.Reason = v4.EventWarning, reason
		ev.Message = fmt.Sprintf("berth cannot reconcile %s (%d failures in a row; next try in %s): %v", key, n, delay, err)
		w.rec.recordOnce(failureEventID(key), reason+err.Error(), ev)
	}
	w.queue.AddAfter(key, delay)
}

// failureDelay is the back-off after n consecutive failures.
func failureDelay(n int) time.Duration {
	d := failureBackoff
	for i := 1; i < n && d < maxFailureBackoff; i++ {
		d *= 2
	}
	return min(d, maxFailureBackoff)
}

func failureEventID[K workKey](key K) string { return "reconcile-failure/" + key.String() }

// aboutApp names the object of an application, process, deployment or daemonset key.
func aboutApp(k scheduler.AppKey) v4.Event {
	return v4.Event{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name}
}

// aboutDependency names the object of a dependency key.
func aboutDependency(k depKey) v4.Event {
	return v4.Event{Kind: v4.KindDependency, Namespace: k.Namespace, Name: k.Name}
}

// nodeName is a node's name as a work queue key.
type nodeName string

func (n nodeName) String() string { return string(n) }

// aboutNode names the node of a drain key.
func aboutNode(name nodeName) v4.Event { return v4.Event{Kind: v4.KindNode, Name: string(name)} }
