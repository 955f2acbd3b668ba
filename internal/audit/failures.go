package audit

import (
	"errors"
	"slices"
	"sort"
	"time"
)

// Failed authentications (a bad, unknown, revoked or expired token) are audited, but not
// one line per try: someone guessing tokens would fill the log with them, and push out
// the lines that matter. They are summed up per source and minute instead: one line per
// source that failed in a minute, with how many tries, how many of them the server slowed
// down, and a few of the token IDs claimed, written once the minute is over.

// Bounds of one minute's sum.
const (
	// maxSources is how many sources one minute keeps apart; further ones are summed up
	// under OtherSources, so a flood from many addresses costs bounded memory.
	maxSources = 1000
	// maxTokenIDs is how many distinct token IDs a source's line names.
	maxTokenIDs = 5
	// OtherSources is the source of the line that sums up sources past maxSources.
	OtherSources = "other"
	// flushDelay is how long after a minute's end its lines are written: failures of a
	// request that began in that minute still count there.
	flushDelay = 2 * time.Second
)

// WhoUnauthenticated and VerbAuthenticate name the lines of failed authentications.
const (
	WhoUnauthenticated = "unauthenticated"
	VerbAuthenticate   = "authenticate"
)

// failureWindow is one minute's failed authentications, by source.
type failureWindow struct {
	minute  time.Time
	sources map[string]*failureSum
	timer   *time.Timer // writes the minute's lines after it ends
	closed  bool
}

type failureSum struct {
	count, throttled int
	tokens           []string
}

// AuthFailure counts one failed authentication from source (an address) at now. tokenID
// is the token the request claimed ("" when it named none readable); throttled says the
// server refused it before checking its token (429). The sum of each source's minute is
// written as one line shortly after the minute ends, or at Close.
func (l *Log) AuthFailure(source, tokenID string, throttled bool, now time.Time) {
	minute := now.UTC().Truncate(time.Minute)
	l.mu.Lock()
	defer l.mu.Unlock()
	w := &l.failures
	if w.closed {
		return
	}
	if !w.minute.Equal(minute) && len(w.sources) > 0 {
		// A new minute began before the timer wrote the last one (or a clock went back):
		// write it now.
		l.writeFailuresLocked()
	}
	if len(w.sources) == 0 {
		w.minute, w.sources = minute, map[string]*failureSum{}
		if w.timer != nil {
			w.timer.Stop()
		}
		// Timed from the caller's clock, so the time a test gives is the one that counts.
		w.timer = time.AfterFunc(minute.Add(time.Minute+flushDelay).Sub(now), func() { l.flushMinute(minute) })
	}
	if _, ok := w.sources[source]; !ok && len(w.sources) >= maxSources {
		source = OtherSources
	}
	sum := w.sources[source]
	if sum == nil {
		sum = &failureSum{}
		w.sources[source] = sum
	}
	sum.count++
	if throttled {
		sum.throttled++
	}
	if tokenID != "" && len(sum.tokens) < maxTokenIDs && !slices.Contains(sum.tokens, tokenID) {
		sum.tokens = append(sum.tokens, clip(tokenID))
	}
}

// Flush writes the lines of a minute that ended before now.
func (l *Log) Flush(now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.failures.sources) == 0 || !now.UTC().Truncate(time.Minute).After(l.failures.minute) {
		return nil
	}
	return l.writeFailuresLocked()
}

// flushMinute writes the lines of minute unless they were written already. A failure to
// write them would fail the next Record too, whose caller logs it.
func (l *Log) flushMinute(minute time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.failures.sources) > 0 && l.failures.minute.Equal(minute) {
		_ = l.writeFailuresLocked()
	}
}

// stopFailures writes what is summed up, however recent, and counts nothing more.
func (l *Log) stopFailures() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failures.closed = true
	if l.failures.timer != nil {
		l.failures.timer.Stop()
	}
	return l.writeFailuresLocked()
}

// writeFailuresLocked writes one line per source of the current sum, sorted by source,
// and empties it (l.mu held).
func (l *Log) writeFailuresLocked() error {
	w := &l.failures
	sources := make([]string, 0, len(w.sources))
	for src := range w.sources {
		sources = append(sources, src)
	}
	sort.Strings(sources)
	var errs []error
	for _, src := range sources {
		sum := w.sources[src]
		e := Entry{Time: w.minute, Who: WhoUnauthenticated, Verb: VerbAuthenticate, Status: 401, Remote: src,
			Count: sum.count, Throttled: sum.throttled, Tokens: sum.tokens}
		if err := l.recordLocked(e); err != nil {
			errs = append(errs, err)
		}
	}
	w.sources = nil
	return errors.Join(errs...)
}
