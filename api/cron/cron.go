// Package cron is the schedule arithmetic of cronjobs and cronworkflows: it parses a
// schedule (five cron fields, `@daily`-style shortcuts, `@every <duration>`), refuses
// the schedules admission must refuse (never fires, fires more than once a minute), and
// computes the next time a schedule fires in a time zone and the runs missed since a
// time. It does no I/O and keeps no clock: callers hand it the times.
//
// The rules, daylight-saving changes included, are described in docs/jobs.md,
// "Schedules".
package cron

import (
	"errors"
	"fmt"
	"strings"
	"time"

	// The zone database is built in as a fallback, so that a server on a host (or in an
	// image) without /usr/share/zoneinfo still knows the zones that specs name.
	_ "time/tzdata"
)

// MaxSpecLen bounds a schedule's text; the longest sensible one is far shorter.
const MaxSpecLen = 256

// Options are the caller's choices when parsing.
type Options struct {
	// Location is the time zone the five fields are read in; nil means UTC.
	Location *time.Location
	// AllowSubMinute admits `@every` durations under a minute (down to one second).
	// Admission refuses them by default; tests and fast test schedules allow them.
	AllowSubMinute bool
}

// Schedule is a parsed schedule. It is immutable and safe for concurrent use.
type Schedule struct {
	spec  string
	every time.Duration // > 0 for `@every`; the fields below are then unused
	loc   *time.Location

	minute, hour, dom, month, dow field
}

// shortcuts are the `@` names of common schedules, as Vixie cron and Kubernetes read them.
var shortcuts = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// Parse parses a schedule. Errors name the field and the value, as in
// `minute: 61 is out of 0-59`; callers prefix the spec's field path.
func Parse(spec string, opts Options) (*Schedule, error) {
	if len(spec) > MaxSpecLen {
		return nil, fmt.Errorf("schedule is %d bytes long, at most %d", len(spec), MaxSpecLen)
	}
	spec = strings.TrimSpace(spec)
	loc := opts.Location
	if loc == nil {
		loc = time.UTC
	}
	s := &Schedule{spec: spec, loc: loc}
	lower := strings.ToLower(spec)
	switch {
	case spec == "":
		return nil, errors.New("schedule is empty")
	case strings.HasPrefix(lower, "tz=") || strings.HasPrefix(lower, "cron_tz="):
		return nil, errors.New("a time zone in the schedule is not supported: set timeZone")
	case strings.HasPrefix(lower, "@every ") || strings.HasPrefix(lower, "@every\t") || lower == "@every":
		d, err := parseEvery(spec[len("@every"):], opts.AllowSubMinute)
		if err != nil {
			return nil, err
		}
		s.every = d
		return s, nil
	case strings.HasPrefix(spec, "@"):
		fields, ok := shortcuts[lower]
		if !ok {
			return nil, fmt.Errorf("unknown shortcut %q (@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, @every <duration>)", clip(spec))
		}
		spec = fields
	}
	if err := s.parseFields(spec); err != nil {
		return nil, err
	}
	if !s.fires() {
		return nil, errors.New("schedule never fires: no month it names has the day of the month it names")
	}
	return s, nil
}

// parseFields parses the five fields.
func (s *Schedule) parseFields(spec string) error {
	parts := strings.Fields(spec)
	if len(parts) != 5 {
		return fmt.Errorf("want 5 fields (minute hour day-of-month month day-of-week), got %d", len(parts))
	}
	targets := []struct {
		dst *field
		def fieldDef
	}{{&s.minute, minuteField}, {&s.hour, hourField}, {&s.dom, domField}, {&s.month, monthField}, {&s.dow, dowField}}
	for i, t := range targets {
		f, err := parseField(parts[i], t.def)
		if err != nil {
			return err
		}
		*t.dst = f
	}
	return nil
}

// parseEvery parses the duration of `@every`: a Go duration of whole seconds, at least
// one, and at least a minute unless sub-minute schedules are allowed. Whole seconds keep
// every time the schedule fires a whole second, as RFC 3339 times in a status store it.
func parseEvery(arg string, allowSubMinute bool) (time.Duration, error) {
	arg = strings.TrimSpace(arg)
	if arg == "" {
		return 0, errors.New("@every: a duration is required, as in @every 5m")
	}
	d, err := time.ParseDuration(arg)
	if err != nil {
		return 0, fmt.Errorf("@every: %q is not a duration (such as 90s, 5m, 1h30m)", clip(arg))
	}
	switch {
	case d < time.Second:
		return 0, fmt.Errorf("@every: %s is shorter than 1s", d)
	case d%time.Second != 0:
		return 0, fmt.Errorf("@every: %s is not a whole number of seconds", d)
	case d < time.Minute && !allowSubMinute:
		return 0, fmt.Errorf("@every: %s fires more than once a minute", d)
	}
	return d, nil
}

// fires reports whether the fields ever match a date. Only a day-of-month combined with
// an unrestricted day-of-week can miss: `30 2` (February 30th) or `31 4,6,9,11`. A
// restricted day-of-week matches some day of every month whatever the day-of-month says
// (either matches), so it always fires. February counts 29 days: a February 29th
// schedule fires every leap year, at most eight years apart (2096, then 2104).
func (s *Schedule) fires() bool {
	if !s.dow.star {
		return true
	}
	for m := 1; m <= 12; m++ {
		if !has(s.month.bits, m) {
			continue
		}
		if d, ok := nextBit(s.dom.bits, 1); ok && d <= maxDays[m] {
			return true
		}
	}
	return false
}

// maxDays is the most days each month can have (February in a leap year).
var maxDays = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// String returns the schedule as written, without surrounding space.
func (s *Schedule) String() string { return s.spec }

// Every returns the interval of an `@every` schedule, and 0 for the others.
func (s *Schedule) Every() time.Duration { return s.every }

// Location returns the time zone the schedule is read in.
func (s *Schedule) Location() *time.Location { return s.loc }

// MaxTimeZoneLen bounds a time zone name; the longest IANA name is about 30 bytes.
const MaxTimeZoneLen = 64

// ParseTimeZone loads an IANA time zone by name (`Europe/Berlin`); "" is UTC. `Local`
// is refused: it is whatever zone the server that happens to lead runs in, so two
// servers of a cluster could fire the same schedule at different times.
func ParseTimeZone(name string) (*time.Location, error) {
	switch {
	case name == "":
		return time.UTC, nil
	case len(name) > MaxTimeZoneLen:
		return nil, fmt.Errorf("timeZone: %d bytes long, at most %d", len(name), MaxTimeZoneLen)
	case name == "Local":
		return nil, errors.New(`timeZone: "Local" depends on the server; name a zone such as "Europe/Berlin" or "UTC"`)
	}
	// LoadLocation refuses absolute paths and "..", so a name never reads a file
	// outside the zone database.
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("timeZone: unknown time zone %q", clip(name))
	}
	return loc, nil
}
