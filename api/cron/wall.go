package cron

import "time"

// wall is a wall-clock minute in the schedule's zone, with no zone attached: what the
// five fields match. Walls are searched first and turned into instants after, because
// a wall can be skipped or repeated by a daylight-saving change.
type wall struct {
	year         int
	month, day   int
	hour, minute int
}

// searchYears bounds every search: the longest time between two firings of a
// schedule that fires at all is eight years (February 29th across 2100, which is not
// a leap year), and one more year covers a search that starts late in a year.
const searchYears = 9

// maxSteps is the hard cap on the iterations of one search. Each step moves to the
// next matching month, day, hour or minute, so a search takes a few per month of the
// horizon; the cap is reached only if the arithmetic below is wrong.
const maxSteps = 12 * searchYears * 8

// wallOf returns t's wall minute in t's zone, looking the zone up once.
func wallOf(t time.Time) wall {
	u := t.UTC().Add(offset(t))
	y, mo, d := u.Date()
	h, m, _ := u.Clock()
	return wall{year: y, month: int(mo), day: d, hour: h, minute: m}
}

// before orders walls.
func (w wall) before(o wall) bool {
	if w.year != o.year {
		return w.year < o.year
	}
	if w.month != o.month {
		return w.month < o.month
	}
	if w.day != o.day {
		return w.day < o.day
	}
	if w.hour != o.hour {
		return w.hour < o.hour
	}
	return w.minute < o.minute
}

// seconds is the wall as seconds on a zone-free time line, to measure between walls.
func (w wall) seconds() int64 {
	return time.Date(w.year, time.Month(w.month), w.day, w.hour, w.minute, 0, 0, time.UTC).Unix()
}

// addMinute returns the next wall minute.
func (w wall) addMinute() wall {
	if w.minute++; w.minute < 60 {
		return w
	}
	w.minute = 0
	if w.hour++; w.hour < 24 {
		return w
	}
	return w.nextDay()
}

// nextDay returns the start of the next day.
func (w wall) nextDay() wall {
	if w.day+1 > daysIn(w.year, w.month) {
		return w.nextMonth()
	}
	return wall{year: w.year, month: w.month, day: w.day + 1}
}

// nextMonth returns the start of the next month.
func (w wall) nextMonth() wall {
	if w.month == 12 {
		return wall{year: w.year + 1, month: 1, day: 1}
	}
	return wall{year: w.year, month: w.month + 1, day: 1}
}

func daysIn(year, month int) int {
	if month == 2 {
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	}
	return maxDays[month]
}

// weekday returns the day of the week of a date, 0 for Sunday.
func weekday(year, month, day int) int {
	return int(time.Date(year, time.Month(month), day, 12, 0, 0, 0, time.UTC).Weekday())
}

// nextWall returns the first wall at or after w that the fields match, searching no
// later than the year limit. Each step skips to the next value a field allows.
func (s *Schedule) nextWall(w wall, limit int) (wall, bool) {
	for range maxSteps {
		if w.year > limit {
			return wall{}, false
		}
		if !has(s.month.bits, w.month) {
			if m, ok := nextBit(s.month.bits, w.month+1); ok && m <= 12 {
				w = wall{year: w.year, month: m, day: 1}
			} else {
				w = wall{year: w.year + 1, month: 1, day: 1}
			}
			continue
		}
		d, ok := s.nextDayIn(w.year, w.month, w.day)
		if !ok {
			w = w.nextMonth()
			continue
		}
		if d != w.day {
			w = wall{year: w.year, month: w.month, day: d}
		}
		h, ok := nextBit(s.hour.bits, w.hour)
		if !ok || h > 23 {
			w = w.nextDay()
			continue
		}
		if h != w.hour {
			w.hour, w.minute = h, 0
		}
		m, ok := nextBit(s.minute.bits, w.minute)
		if !ok || m > 59 {
			w = wall{year: w.year, month: w.month, day: w.day, hour: w.hour, minute: 59}.addMinute()
			continue
		}
		w.minute = m
		return w, true
	}
	return wall{}, false
}

// nextDayIn returns the first day ≥ day of the month that the day fields match. When
// both day-of-month and day-of-week are restricted, either matching is enough (Vixie
// cron's rule, which Kubernetes keeps); when one is `*`, the other decides.
func (s *Schedule) nextDayIn(year, month, day int) (int, bool) {
	last := daysIn(year, month)
	byDom, domOK := nextBit(s.dom.bits, day)
	domOK = domOK && byDom <= last
	byDow, dowOK := s.nextWeekday(year, month, day)
	dowOK = dowOK && byDow <= last
	switch {
	case s.dom.star && s.dow.star:
		return day, day <= last
	case s.dow.star:
		return byDom, domOK
	case s.dom.star:
		return byDow, dowOK
	case domOK && (!dowOK || byDom < byDow):
		return byDom, true
	default:
		return byDow, dowOK
	}
}

// nextWeekday returns the first day ≥ day whose day of the week the field allows; it
// may be past the month's end.
func (s *Schedule) nextWeekday(year, month, day int) (int, bool) {
	wd := weekday(year, month, day)
	for i := range 7 {
		if has(s.dow.bits, (wd+i)%7) {
			return day + i, true
		}
	}
	return 0, false
}
