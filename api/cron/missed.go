package cron

import "time"

// MaxMissed caps the count MissedSince returns, as Kubernetes' cronjob controller stops
// counting at 100: past that the exact number changes nothing (one run starts) and
// counting it would cost time proportional to the outage.
const MaxMissed = 100

// MissedSince returns the latest time in (last, now] that the schedule fired, and how
// many times it fired there, at most MaxMissed (n == MaxMissed means "that many or
// more"). latest is zero when n is 0. With a startingDeadline > 0, times earlier than
// now-startingDeadline are too late to start and are not counted.
//
// The cronjob controller starts one run for latest, not one per missed time, so that
// an outage or a leader change starts a missed schedule at most once; last is the
// schedule's last scheduled time (or the object's creation).
func (s *Schedule) MissedSince(last, now time.Time, startingDeadline time.Duration) (latest time.Time, n int) {
	begin := last
	if startingDeadline > 0 {
		if early := now.Add(-startingDeadline); early.After(begin) {
			begin = early
		}
	}
	if !now.After(begin) {
		return time.Time{}, 0
	}
	if s.every > 0 {
		return s.missedEvery(last, begin, now)
	}
	for t := begin; n < MaxMissed; n++ {
		t = s.Next(t)
		if t.IsZero() || t.After(now) {
			return latest, n
		}
		latest = t
	}
	if next := s.Next(latest); next.IsZero() || next.After(now) {
		return latest, n
	}
	return s.lastFiring(latest, now), n
}

// missedEvery counts an `@every` schedule's times base+k·d in (begin, now] directly,
// where base is last rounded down to the second. It counts in whole seconds (an
// `@every` period is a whole number of seconds), which no span of time.Time overflows.
func (s *Schedule) missedEvery(last, begin, now time.Time) (time.Time, int) {
	base, step := last.Unix(), int64(s.every/time.Second)
	kMax := floorDiv(now.Unix()-base, step)       // the last k with base+k·d ≤ now
	kMin := floorDiv(begin.Unix()-base, step) + 1 // the first with base+k·d > begin
	if kMax < kMin {
		return time.Time{}, 0
	}
	n := min(kMax-kMin+1, MaxMissed)
	return time.Unix(base+kMax*step, 0).In(s.loc), int(n)
}

// floorDiv divides rounding down, also for a negative a (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// lastFiring returns the latest firing ≤ now, given lo, a firing whose next firing is
// also ≤ now. It bisects on whole seconds (every firing of a five-field schedule is a
// whole minute of wall time, so a whole second): the answer is the smallest second x
// with Next(x) > now. About 30 calls to Next for an outage of years.
func (s *Schedule) lastFiring(lo, now time.Time) time.Time {
	a, b := lo.Unix(), now.Unix() // Next(a) ≤ now < Next(b)
	for b-a > 1 {
		mid := a + (b-a)/2
		if s.Next(time.Unix(mid, 0)).After(now) {
			b = mid
		} else {
			a = mid
		}
	}
	return time.Unix(b, 0).In(s.loc)
}
