package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// WatchLimit bounds what a watch holds for a consumer that falls behind
// (docs/operations.md, Watch streams and slow clients): the live changes waiting to be
// taken, by count and by their stored size. A watch without a limit makes etcd wait for
// its consumer instead, which is right for the controllers in this process but lets a
// client that stops reading hold every change since in the server's memory.
type WatchLimit struct {
	Events int
	Bytes  int
	// Budget, when set, is shared by many watches (a server's streams): while their
	// queues hold more than it together, every one of them that has a change waiting is
	// behind and ends, so many stuck clients cannot add up past it either.
	Budget *WatchBudget
	// progress: the watch also sends Progress events (WithProgress).
	progress bool
}

// StreamWatchLimit bounds every watch the API streams to a client: about 8 s of a flood
// of 100 KB objects at 1 MB/s, and far more than a reading client ever has waiting.
var StreamWatchLimit = WatchLimit{Events: 1000, Bytes: 8 << 20}

// DefaultWatchBudget is what the streams of one server may hold together.
const DefaultWatchBudget = 256 << 20

func (l WatchLimit) bounded() bool { return l.Events > 0 || l.Bytes > 0 || l.Budget != nil }

func (l WatchLimit) exceeded(events, bytes int) bool {
	return (l.Events > 0 && events > l.Events) || (l.Bytes > 0 && bytes > l.Bytes) ||
		(events > 0 && l.Budget.exceeded())
}

// WatchBudget counts the bytes that the queues of several bounded watches hold.
type WatchBudget struct {
	max  int64
	used atomic.Int64
}

// NewWatchBudget returns a budget of max bytes.
func NewWatchBudget(max int64) *WatchBudget { return &WatchBudget{max: max} }

// Used is the bytes held now.
func (b *WatchBudget) Used() int64 { return b.used.Load() }

func (b *WatchBudget) add(n int) {
	if b != nil {
		b.used.Add(int64(n))
	}
}

func (b *WatchBudget) exceeded() bool { return b != nil && b.used.Load() > b.max }

// ErrFellBehind ends a bounded watch whose consumer fell behind; errors.Is finds it in a
// *FellBehindError.
var ErrFellBehind = errors.New("watch fell behind")

// FellBehindError says how far a consumer fell behind and where it can resume: Revision
// is the last revision it was given, so a new watch from it (or a new list) loses nothing.
type FellBehindError struct {
	Revision int64
	Events   int
	Bytes    int
}

func (e *FellBehindError) Error() string {
	return fmt.Sprintf("%s: %d changes (%.1f MB) were waiting for this client; watch again with resourceVersion=%d, or list again",
		ErrFellBehind, e.Events, float64(e.Bytes)/(1<<20), e.Revision)
}

// Is makes errors.Is(err, ErrFellBehind) true.
func (e *FellBehindError) Is(target error) bool { return target == ErrFellBehind }

// WatchOption changes how a watch treats its consumer.
type WatchOption func(*WatchLimit)

// Bounded makes a watch end with a *FellBehindError once more than l waits for its
// consumer, instead of making etcd wait.
func Bounded(l WatchLimit) WatchOption {
	return func(w *WatchLimit) { progress := w.progress; *w = l; w.progress = progress }
}

// WithProgress makes a watch also send a Progress event whenever etcd tells how far it
// is (after RequestProgress): every change up to its Revision has been sent. A reader
// that keeps a kind in memory can then tell it is current at a revision that changed
// nothing of that kind.
func WithProgress() WatchOption { return func(w *WatchLimit) { w.progress = true } }

func watchLimit(opts []WatchOption) WatchLimit {
	var l WatchLimit
	for _, o := range opts {
		o(&l)
	}
	return l
}

// bufferFor is the size of a watch channel. A bounded watch keeps its changes in its
// queue, where they count against the limit and are dropped when the consumer falls
// behind; its channel holds a few, enough for a stream to write a burst at once.
func bufferFor(l WatchLimit) int {
	if l.bounded() {
		return boundedWatchBuffer
	}
	return watchBuffer
}

const boundedWatchBuffer = 16

// queuedChange is one converted change waiting for the consumer.
type queuedChange[T any] struct {
	value T
	rev   int64
	size  int
}

// forward sends the changes of wch, converted by convert (false skips one), to out in
// order until wch ends (after the waiting changes are taken), ctx is done, or, with a
// limit, the consumer falls behind: then it returns a *FellBehindError naming the last
// revision given to out (sent, initially the watch's start), and the waiting changes are
// dropped with the etcd watch. Without a limit it reads etcd only when the queue is empty,
// so a slow consumer slows the etcd watch down as before; with one it never stops reading,
// so etcd's client holds nothing for a slow consumer and the queue is all there is.
// markEnd, when set, is called on the last converted change of each revision; progress,
// when set, makes the value sent for a progress notification of etcd's.
func forward[T any](ctx context.Context, log *slog.Logger, wch clientv3.WatchChan, out chan<- T, limit WatchLimit, sent int64,
	convert func(*clientv3.Event) (T, bool), markEnd func(*T), progress func(rev int64) T) *FellBehindError {
	q := changeQueue[T]{budget: limit.Budget}
	defer q.clear()
	var ended bool
	for {
		var (
			to   chan<- T
			head T
			from = wch
		)
		if q.len() > 0 {
			to, head = out, q.first().value
			if !limit.bounded() || ended {
				from = nil
			}
		} else if ended {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case to <- head:
			sent = q.pop()
		case resp, ok := <-from:
			if !ok || resp.Err() != nil {
				if ok {
					log.Debug("watch ended", "err", resp.Err())
				}
				ended = true
				continue
			}
			if resp.IsProgressNotify() && progress != nil {
				q.add(queuedChange[T]{value: progress(resp.Header.Revision), rev: resp.Header.Revision})
			}
			first := q.len()
			for _, ev := range resp.Events {
				if v, ok := convert(ev); ok {
					q.push(v, ev)
				}
			}
			if markEnd != nil {
				q.markRevisionEnds(first, markEnd)
			}
			if !limit.bounded() {
				continue
			}
			// Hand over what the consumer has room for before judging it.
			for q.len() > 0 && trySend(out, q.first().value) {
				sent = q.pop()
			}
			if limit.exceeded(q.len(), q.bytes) {
				// Name the last revision sent whole: when part of the last one sent is
				// still queued (a transaction that wrote many objects), a watch resumed
				// after it would miss the rest, so name the one before (the consumer
				// gets that revision's first changes twice).
				whole := sent
				if q.len() > 0 && q.first().rev == sent {
					whole = sent - 1
				}
				return &FellBehindError{Revision: whole, Events: q.len(), Bytes: q.bytes}
			}
		}
	}
}

// sendLast gives the consumer v, the last item of a watch, unless ctx ends first.
func sendLast[T any](ctx context.Context, out chan<- T, v T) {
	select {
	case out <- v:
	case <-ctx.Done():
	}
}

func trySend[T any](out chan<- T, v T) bool {
	select {
	case out <- v:
		return true
	default:
		return false
	}
}
