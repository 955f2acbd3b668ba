package store

import (
	"fmt"
	"hash/maphash"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// Similar events are combined, as Kubernetes' event aggregator does: once an object had
// aggregateAfter distinct Normal events of one reason within aggregateWindow (the
// "instance N on node X is Running" of a large application's burst), the next ones of
// that reason become one record whose count says how many there were, instead of a
// record each. Warnings are never combined: each names what failed, and notify callbacks
// follow them one by one.
const (
	aggregateAfter  = 10
	aggregateWindow = 10 * time.Minute
	// maxAggregateKeys bounds the objects and reasons followed; when full, the map starts
	// over (an object then gets up to aggregateAfter more records of its own).
	maxAggregateKeys = 4096
)

// similarKey is what makes two events similar: the same object, type and reason.
type similarKey struct {
	ns, kind, name, typ, reason string
}

// similarSeen is what the aggregator knows of one similarKey's window: when it began and
// the distinct events (hashes of message, task group and node) seen since.
type similarSeen struct {
	start    time.Time
	distinct []uint64
}

// aggregator decides which queued events are combined (QueueEvent).
type aggregator struct {
	mu   sync.Mutex
	seed maphash.Seed
	seen map[similarKey]*similarSeen
}

func newAggregator() *aggregator {
	return &aggregator{seed: maphash.MakeSeed(), seen: map[similarKey]*similarSeen{}}
}

// combine returns r as it is to be recorded: itself, or, once its object had enough
// distinct similar events in the window, the combined record of its reason.
func (a *aggregator) combine(r v4.Event) v4.Event {
	if r.Type != "" && r.Type != v4.EventNormal {
		return r
	}
	key := similarKey{ns: r.Namespace, kind: string(r.Kind), name: r.Name, typ: v4.EventNormal, reason: r.Reason}
	h := maphash.String(a.seed, r.Message+"\x00"+r.TaskGroup+"\x00"+r.Node)
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.seen[key]
	if s == nil || r.Time.Sub(s.start) > aggregateWindow {
		if s == nil && len(a.seen) >= maxAggregateKeys {
			clear(a.seen)
		}
		s = &similarSeen{start: r.Time}
		a.seen[key] = s
	}
	for _, d := range s.distinct {
		if d == h {
			return r // a repeat: it merges into its own record
		}
	}
	if len(s.distinct) < aggregateAfter {
		s.distinct = append(s.distinct, h)
		return r
	}
	return combinedEvent(r)
}

// combinedEvent is the record that counts the similar events of r's object and reason:
// one message per reason, so that they all merge into it.
func combinedEvent(r v4.Event) v4.Event {
	r.Message = fmt.Sprintf("(combined from similar events) more than %d distinct %s events within %s; the count says how many",
		aggregateAfter, r.Reason, aggregateWindow)
	r.TaskGroup, r.Node = "", ""
	return r
}
