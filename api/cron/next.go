package cron

import "time"

// maxRepeatMinutes bounds the walk over a repeated stretch of wall time: daylight
// saving repeats an hour (30 minutes on Lord Howe Island); a day is far more than any
// zone has repeated.
const maxRepeatMinutes = 24 * 60

// Next returns the first time after `after` that the schedule fires, in the schedule's
// zone, or the zero time if it fires in none of the next nine years (which a schedule
// that Parse accepted always does).
//
// An `@every d` schedule fires d after `after` (rounded down to the second, so that its
// times survive a round trip through RFC 3339): callers hand it the previous scheduled
// time, not the clock, so that the period does not drift by the controller's delays.
//
// Daylight-saving changes follow Vixie cron. When the hour field is `*`, the schedule
// runs on the clock as it reads: skipped wall times do not happen and a repeated hour
// runs twice, which keeps `*/5 * * * *` five real minutes apart. Otherwise each
// matching wall time fires exactly once a day: one skipped by a spring-forward fires
// at the first instant after the gap, and one repeated by a fall-back fires at its
// first occurrence only.
func (s *Schedule) Next(after time.Time) time.Time {
	if s.every > 0 {
		return after.Truncate(time.Second).Add(s.every).In(s.loc)
	}
	after = after.In(s.loc)
	tr, d, inFold := foldAt(after)
	next := s.nextByWall(after, tr, d, inFold)
	if s.hour.star && inFold {
		if t, ok := s.nextInRepeat(after, tr, d); ok && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

// nextByWall walks the matching walls after after's and returns the first instant after
// `after` at which one fires: a wall's only or first occurrence, or, for a wall in a gap,
// the end of the gap (unless the hour field is `*`, whose skipped walls never happen).
func (s *Schedule) nextByWall(after, tr time.Time, d time.Duration, inFold bool) time.Time {
	start := wallOf(after).addMinute()
	if inFold && !after.Before(tr) {
		// after is in the second pass of a repeated hour: the first occurrences of
		// the walls up to its end are behind it.
		start = wallOf(tr.Add(d))
	}
	limit := start.year + searchYears
	for range maxSteps {
		w, ok := s.nextWall(start, limit)
		if !ok {
			return time.Time{}
		}
		first, gap := s.resolve(w)
		switch {
		case gap && s.hour.star:
			start = wallOf(first) // the clock jumps from before w to here
			continue
		case first.After(after):
			return first
		}
		start = w.addMinute()
	}
	return time.Time{}
}

// nextInRepeat returns, for a schedule whose hour field is `*`, its first firing after
// `after` in the second pass of the repeated hour that `after` lies in, which starts at
// tr and lasts d.
func (s *Schedule) nextInRepeat(after, tr time.Time, d time.Duration) (time.Time, bool) {
	u := tr
	if !after.Before(tr) {
		u = after.Truncate(time.Minute).Add(time.Minute)
	}
	end := tr.Add(d)
	for i := 0; i < maxRepeatMinutes && u.Before(end); i++ {
		if s.matches(wallOf(u)) {
			return u, true
		}
		u = u.Add(time.Minute)
	}
	return time.Time{}, false
}

// matches reports whether the fields match a wall.
func (s *Schedule) matches(w wall) bool {
	if !has(s.minute.bits, w.minute) || !has(s.hour.bits, w.hour) || !has(s.month.bits, w.month) {
		return false
	}
	d, ok := s.nextDayIn(w.year, w.month, w.day)
	return ok && d == w.day
}

// offset returns t's zone offset.
func offset(t time.Time) time.Duration {
	_, off := t.Zone()
	return time.Duration(off) * time.Second
}

// wallSeconds is t's wall clock on wall.seconds's time line.
func wallSeconds(t time.Time) int64 { return t.Unix() + int64(offset(t)/time.Second) }

// maxShift bounds how far a zone's offset has ever jumped (Samoa and Alaska moved by a
// whole day across the date line): the neighbours of a zone are looked up only that
// close to its bounds, since every lookup in a zone past its last listed change
// evaluates the zone's rule anew.
const maxShift = 25 * time.Hour

// resolve returns the instant a wall fires at: its only occurrence; its first when a
// fall-back repeats it; when a spring-forward skips it, the end of the gap, and gap is
// true.
func (s *Schedule) resolve(w wall) (first time.Time, gap bool) {
	ws := w.seconds()
	t := time.Date(w.year, time.Month(w.month), w.day, w.hour, w.minute, 0, 0, s.loc)
	if wallSeconds(t) != ws {
		return gapEnd(t, ws), true
	}
	// time.Date picks either occurrence of a repeated wall.
	if tr, d, ok := foldAt(t); ok && !t.Before(tr) {
		return t.Add(-d), false
	}
	return t, false
}

// gapEnd returns the instant a spring-forward jumps to over the wall ws: the start or
// the end of the zone that time.Date placed the missing wall in.
func gapEnd(t time.Time, ws int64) time.Time {
	start, end := t.ZoneBounds()
	for _, tr := range []time.Time{start, end} {
		if tr.IsZero() {
			continue
		}
		jump := offset(tr) - offset(tr.Add(-time.Nanosecond))
		after := wallSeconds(tr)
		if jump > 0 && ws < after && ws >= after-int64(jump/time.Second) {
			return tr
		}
	}
	return t // not reached for zone data Go can load
}

// foldAt reports whether t lies in either pass of a repeated stretch of wall time: tr
// is the fall-back instant where the second pass starts, d the length of each pass.
func foldAt(t time.Time) (tr time.Time, d time.Duration, ok bool) {
	start, end := t.ZoneBounds()
	if end.IsZero() && start.IsZero() {
		return time.Time{}, 0, false
	}
	off := offset(t)
	if !end.IsZero() && end.Sub(t) <= maxShift {
		if d := off - offset(end); d > 0 && end.Sub(t) <= d {
			return end, d, true
		}
	}
	if !start.IsZero() && t.Sub(start) < maxShift {
		if d := offset(start.Add(-time.Nanosecond)) - off; d > 0 && t.Sub(start) < d {
			return start, d, true
		}
	}
	return time.Time{}, 0, false
}
