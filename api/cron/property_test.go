package cron

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// The property test checks Next against a reference that walks time minute by minute
// and decides each instant from the rules alone (docs/jobs.md, "Schedules"), sharing no
// search code with Next.

// refMatch decides whether the fields match a wall, written out apart from nextDayIn.
func refMatch(s *Schedule, w wall) bool {
	if !has(s.minute.bits, w.minute) || !has(s.hour.bits, w.hour) || !has(s.month.bits, w.month) {
		return false
	}
	dom := has(s.dom.bits, w.day)
	dow := has(s.dow.bits, int(time.Date(w.year, time.Month(w.month), w.day, 0, 0, 0, 0, time.UTC).Weekday()))
	if s.dom.star || s.dow.star {
		return dom && dow
	}
	return dom || dow
}

// refFires decides whether the schedule fires at u, an instant on a whole minute.
func refFires(s *Schedule, u time.Time) bool {
	u = u.In(s.loc)
	w := wallOf(u)
	if s.hour.star { // the clock as it reads
		return refMatch(s, w)
	}
	if refMatch(s, w) && !seenEarlier(u) {
		return true
	}
	// A spring-forward that lands at u skipped walls; any of them fires here.
	_, before := u.Add(-time.Second).Zone()
	_, now := u.Zone()
	for m := 1; m <= (now-before)/60; m++ {
		skipped := time.Unix(wallSeconds(u)-int64(60*m), 0).UTC()
		if refMatch(s, wallOf(skipped)) {
			return true
		}
	}
	return false
}

// seenEarlier reports whether the clock read u's wall minute before u (a fall-back).
func seenEarlier(u time.Time) bool {
	w := wallOf(u)
	for m := 1; m <= 3*60; m++ {
		if wallOf(u.Add(-time.Duration(m)*time.Minute)) == w {
			return true
		}
	}
	return false
}

// randomField writes a random field: `*`, a value, a list, a range, steps, names.
func randomField(r *rand.Rand, def fieldDef) string {
	v := func() string {
		n := def.min + r.IntN(def.max-def.min+1)
		if def.names != nil && r.IntN(4) == 0 {
			for name, x := range def.names {
				if x == n {
					return strings.ToLower(name)
				}
			}
		}
		return fmt.Sprint(n)
	}
	switch r.IntN(8) {
	case 0, 1, 2:
		return "*"
	case 3:
		return fmt.Sprintf("*/%d", 1+r.IntN(min(def.max, 20)))
	case 4:
		return v()
	case 5:
		a, b := def.min+r.IntN(def.max-def.min+1), def.min+r.IntN(def.max-def.min+1)
		return fmt.Sprintf("%d-%d/%d", min(a, b), max(a, b), 1+r.IntN(3))
	default:
		items := make([]string, 1+r.IntN(4))
		for i := range items {
			items[i] = v()
		}
		return strings.Join(items, ",")
	}
}

// propertyZones are zones with their daylight-saving changes (UTC instants); starts are
// drawn near one of them half of the time. Lord Howe moves by 30 minutes, Sao Paulo
// skipped midnight, Apia skipped a whole day.
var propertyZones = []struct {
	name        string
	transitions []time.Time
}{
	{"UTC", nil},
	{"Asia/Kathmandu", nil},
	{"America/New_York", []time.Time{time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)}},
	{"Europe/Berlin", []time.Time{time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC), time.Date(2026, 10, 25, 1, 0, 0, 0, time.UTC)}},
	{"Australia/Lord_Howe", []time.Time{time.Date(2026, 4, 4, 15, 0, 0, 0, time.UTC), time.Date(2026, 10, 3, 15, 30, 0, 0, time.UTC)}},
	{"America/Sao_Paulo", []time.Time{time.Date(2018, 11, 4, 3, 0, 0, 0, time.UTC), time.Date(2019, 2, 17, 2, 0, 0, 0, time.UTC)}},
	{"Pacific/Apia", []time.Time{time.Date(2011, 12, 30, 10, 0, 0, 0, time.UTC)}},
}

func TestNextProperty(t *testing.T) {
	const cases = 400
	const window = 2 * 24 * 60 // minutes walked by the reference per case
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < cases; {
		fields := []string{randomField(r, minuteField), randomField(r, hourField), randomField(r, domField),
			randomField(r, monthField), randomField(r, dowField)}
		spec := strings.Join(fields, " ")
		zone := propertyZones[r.IntN(len(propertyZones))]
		loc := mustZone(t, zone.name)
		s, err := Parse(spec, Options{Location: loc})
		if err != nil {
			continue // never fires: Parse refuses it
		}
		i++
		start := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(int64(10 * 365 * 24 * time.Hour))))
		if len(zone.transitions) > 0 && r.IntN(4) != 0 {
			tr := zone.transitions[r.IntN(len(zone.transitions))]
			start = tr.Add(time.Duration(r.Int64N(int64(48*time.Hour))) - 36*time.Hour)
		}
		if r.IntN(3) == 0 {
			start = start.Add(time.Duration(r.Int64N(int64(time.Minute))))
		}
		checkAgainstReference(t, s, start, window)
	}
}

// checkAgainstReference walks whole minutes after start for window minutes and checks
// that the chain of Next calls from start hits exactly the instants the reference fires.
func checkAgainstReference(t *testing.T, s *Schedule, start time.Time, window int) {
	t.Helper()
	u := start.Truncate(time.Minute).Add(time.Minute)
	end := u.Add(time.Duration(window) * time.Minute)
	x := start
	next := s.Next(x)
	for ; u.Before(end); u = u.Add(time.Minute) {
		if !refFires(s, u) {
			continue
		}
		if !next.Equal(u) {
			t.Fatalf("%q in %v: Next(%v) = %v, the reference fires at %v", s, s.loc, x.In(s.loc), next, u.In(s.loc))
		}
		x, next = next, s.Next(next)
	}
	// Past the window the next firing is still after x and one the reference accepts.
	if next.IsZero() || !next.After(x) || next.Before(end) || !refFires(s, next) {
		t.Fatalf("%q in %v: Next(%v) = %v: not a firing after the window ending %v", s, s.loc, x, next, end)
	}
}
