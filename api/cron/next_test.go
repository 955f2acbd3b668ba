package cron

import (
	"testing"
	"time"
)

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := ParseTimeZone(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func mustParse(t testing.TB, spec string, loc *time.Location) *Schedule {
	t.Helper()
	s, err := Parse(spec, Options{Location: loc, AllowSubMinute: true})
	if err != nil {
		t.Fatalf("Parse(%q): %v", spec, err)
	}
	return s
}

// at reads "2006-01-02 15:04:05 -0700" (the offset picks the occurrence of a repeated
// wall time).
func at(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse("2006-01-02 15:04:05 -0700", s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestNext(t *testing.T) {
	cases := []struct {
		name, zone, spec, after string
		want                    []string // successive Next times
	}{
		{"every 5 minutes", "UTC", "*/5 * * * *", "2026-01-01 10:02:30 +0000",
			[]string{"2026-01-01 10:05:00 +0000", "2026-01-01 10:10:00 +0000"}},
		{"exactly on a firing", "UTC", "*/5 * * * *", "2026-01-01 10:05:00 +0000",
			[]string{"2026-01-01 10:10:00 +0000"}},
		{"nanoseconds before", "UTC", "*/5 * * * *", "2026-01-01 10:04:59.999999999 +0000",
			[]string{"2026-01-01 10:05:00 +0000"}},
		{"range with step", "UTC", "1-30/10 * * * *", "2026-01-01 10:25:00 +0000",
			[]string{"2026-01-01 11:01:00 +0000", "2026-01-01 11:11:00 +0000", "2026-01-01 11:21:00 +0000"}},
		{"hour list, wraps to next day", "UTC", "0 9,17 * * *", "2026-01-01 17:00:00 +0000",
			[]string{"2026-01-02 09:00:00 +0000", "2026-01-02 17:00:00 +0000"}},
		{"weekdays skip the weekend", "UTC", "0 9 * * MON-FRI", "2026-01-02 09:00:00 +0000", // a Friday
			[]string{"2026-01-05 09:00:00 +0000"}},
		{"7 is Sunday", "UTC", "0 0 * * 7", "2026-01-01 00:00:00 +0000",
			[]string{"2026-01-04 00:00:00 +0000", "2026-01-11 00:00:00 +0000"}},
		{"either day field matches", "UTC", "0 0 13 * FRI", "2026-02-01 00:00:00 +0000",
			[]string{"2026-02-06 00:00:00 +0000", "2026-02-13 00:00:00 +0000", "2026-02-20 00:00:00 +0000",
				"2026-02-27 00:00:00 +0000", "2026-03-06 00:00:00 +0000"}},
		{"a stepped day-of-month is restricted", "UTC", "0 0 */10 * MON", "2026-02-01 00:00:00 +0000",
			[]string{"2026-02-02 00:00:00 +0000", "2026-02-09 00:00:00 +0000", "2026-02-11 00:00:00 +0000"}},
		{"day-of-week alone", "UTC", "0 0 ? * WED", "2026-02-01 00:00:00 +0000",
			[]string{"2026-02-04 00:00:00 +0000"}},
		{"months by name", "UTC", "0 12 1 JAN,JUL *", "2026-01-01 12:00:00 +0000",
			[]string{"2026-07-01 12:00:00 +0000", "2027-01-01 12:00:00 +0000"}},
		{"31st skips short months", "UTC", "0 0 31 * *", "2026-01-31 00:00:00 +0000",
			[]string{"2026-03-31 00:00:00 +0000", "2026-05-31 00:00:00 +0000", "2026-07-31 00:00:00 +0000",
				"2026-08-31 00:00:00 +0000"}},
		{"last day of February", "UTC", "0 0 28,29 2 *", "2027-02-28 00:00:00 +0000",
			[]string{"2028-02-28 00:00:00 +0000", "2028-02-29 00:00:00 +0000", "2029-02-28 00:00:00 +0000"}},
		{"leap day", "UTC", "0 0 29 2 *", "2024-02-29 00:00:00 +0000",
			[]string{"2028-02-29 00:00:00 +0000"}},
		{"leap day across 2100", "UTC", "0 0 29 2 *", "2096-03-01 00:00:00 +0000",
			[]string{"2104-02-29 00:00:00 +0000"}},
		{"yearly", "UTC", "@yearly", "2026-06-15 08:00:00 +0000",
			[]string{"2027-01-01 00:00:00 +0000"}},
		{"weekly is Sunday midnight", "UTC", "@weekly", "2026-01-01 00:00:00 +0000",
			[]string{"2026-01-04 00:00:00 +0000"}},
		{"every, from the previous time", "UTC", "@every 90s", "2026-01-01 10:00:00 +0000",
			[]string{"2026-01-01 10:01:30 +0000", "2026-01-01 10:03:00 +0000"}},
		{"every, rounded to the second", "UTC", "@every 1m", "2026-01-01 10:00:00.7 +0000",
			[]string{"2026-01-01 10:01:00 +0000"}},
		{"zone: daily in Berlin", "Europe/Berlin", "0 9 * * *", "2026-01-01 09:00:00 +0100",
			[]string{"2026-01-02 09:00:00 +0100"}},
		{"zone: Kathmandu +05:45", "Asia/Kathmandu", "0 0 * * *", "2026-01-01 00:00:00 +0545",
			[]string{"2026-01-02 00:00:00 +0545"}},

		// New York springs forward on 2026-03-08 at 02:00 EST to 03:00 EDT.
		{"NY spring: skipped time fires after the gap", "America/New_York", "30 2 * * *", "2026-03-07 02:30:00 -0500",
			[]string{"2026-03-08 03:00:00 -0400", "2026-03-09 02:30:00 -0400"}},
		{"NY spring: skipped times fire once", "America/New_York", "0,30 2,3 * * *", "2026-03-08 01:00:00 -0500",
			[]string{"2026-03-08 03:00:00 -0400", "2026-03-08 03:30:00 -0400", "2026-03-09 02:00:00 -0400"}},
		{"NY spring: hour * keeps the clock", "America/New_York", "30 * * * *", "2026-03-08 01:30:00 -0500",
			[]string{"2026-03-08 03:30:00 -0400", "2026-03-08 04:30:00 -0400"}},
		{"NY spring: every 15 minutes", "America/New_York", "*/15 * * * *", "2026-03-08 01:45:00 -0500",
			[]string{"2026-03-08 03:00:00 -0400", "2026-03-08 03:15:00 -0400"}},
		{"NY spring: a minute schedule in the gap", "America/New_York", "10-20/5 2 * * *", "2026-03-08 00:00:00 -0500",
			[]string{"2026-03-08 03:00:00 -0400", "2026-03-09 02:10:00 -0400"}},
		// New York falls back on 2026-11-01 at 02:00 EDT to 01:00 EST.
		{"NY fall: repeated time fires once", "America/New_York", "30 1 * * *", "2026-10-31 12:00:00 -0400",
			[]string{"2026-11-01 01:30:00 -0400", "2026-11-02 01:30:00 -0500"}},
		{"NY fall: after, in the second pass", "America/New_York", "30 1 * * *", "2026-11-01 01:10:00 -0500",
			[]string{"2026-11-02 01:30:00 -0500"}},
		{"NY fall: hour * fires in both passes", "America/New_York", "30 * * * *", "2026-11-01 00:31:00 -0400",
			[]string{"2026-11-01 01:30:00 -0400", "2026-11-01 01:30:00 -0500", "2026-11-01 02:30:00 -0500"}},
		{"NY fall: every 20 minutes", "America/New_York", "*/20 * * * *", "2026-11-01 01:30:00 -0400",
			[]string{"2026-11-01 01:40:00 -0400", "2026-11-01 01:00:00 -0500", "2026-11-01 01:20:00 -0500",
				"2026-11-01 01:40:00 -0500", "2026-11-01 02:00:00 -0500"}},
		{"NY fall: hour * from the second pass", "America/New_York", "*/20 * * * *", "2026-11-01 01:05:00 -0500",
			[]string{"2026-11-01 01:20:00 -0500"}},
		{"NY fall: hourly from the first pass", "America/New_York", "@hourly", "2026-11-01 01:10:00 -0400",
			[]string{"2026-11-01 01:00:00 -0500", "2026-11-01 02:00:00 -0500"}},
		// Berlin: 2026-03-29 02:00 CET -> 03:00 CEST; 2026-10-25 03:00 CEST -> 02:00 CET.
		{"Berlin spring", "Europe/Berlin", "30 2 * * *", "2026-03-28 02:30:00 +0100",
			[]string{"2026-03-29 03:00:00 +0200", "2026-03-30 02:30:00 +0200"}},
		{"Berlin spring: the hour after the gap", "Europe/Berlin", "15 3 * * *", "2026-03-28 03:15:00 +0100",
			[]string{"2026-03-29 03:15:00 +0200"}},
		{"Berlin fall", "Europe/Berlin", "30 2 * * *", "2026-10-24 02:30:00 +0200",
			[]string{"2026-10-25 02:30:00 +0200", "2026-10-26 02:30:00 +0100"}},
		{"Berlin fall: hour *", "Europe/Berlin", "0 * * * *", "2026-10-25 01:30:00 +0200",
			[]string{"2026-10-25 02:00:00 +0200", "2026-10-25 02:00:00 +0100", "2026-10-25 03:00:00 +0100"}},
		// Lord Howe Island moves by 30 minutes: 2026-04-05 02:00 +11 -> 01:30 +1030.
		{"Lord Howe: a half-hour fall-back", "Australia/Lord_Howe", "45 1 * * *", "2026-04-04 12:00:00 +1100",
			[]string{"2026-04-05 01:45:00 +1100", "2026-04-06 01:45:00 +1030"}},
		// Sao Paulo skipped midnight on 2018-11-04 (00:00 -03 -> 01:00 -02).
		{"Sao Paulo: midnight skipped", "America/Sao_Paulo", "@daily", "2018-11-03 00:00:00 -0300",
			[]string{"2018-11-04 01:00:00 -0200", "2018-11-05 00:00:00 -0200"}},
		// Samoa skipped 2011-12-30 entirely.
		{"Apia: a day skipped", "Pacific/Apia", "0 12 30 12 *", "2011-12-29 12:00:00 -1000",
			[]string{"2011-12-31 00:00:00 +1400", "2012-12-30 12:00:00 +1400"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			loc := mustZone(t, c.zone)
			s := mustParse(t, c.spec, loc)
			x := at(t, c.after)
			for i, w := range c.want {
				got := s.Next(x)
				if want := at(t, w); !got.Equal(want) {
					t.Fatalf("%s: Next #%d after %v = %v, want %v", c.spec, i+1, x, got, want.In(loc))
				}
				if got.Location() != loc {
					t.Fatalf("Next returned a time in %v, want %v", got.Location(), loc)
				}
				x = got
			}
		})
	}
}

func BenchmarkNext(b *testing.B) {
	ny := mustZone(b, "America/New_York")
	for _, spec := range []string{"*/5 * * * *", "0 9 * * MON-FRI", "0 0 29 2 *", "30 2 * * *", "@every 5m"} {
		s := mustParse(b, spec, ny)
		b.Run(spec, func(b *testing.B) {
			x := time.Date(2026, 1, 1, 0, 0, 0, 0, ny)
			for b.Loop() {
				x = s.Next(x)
				if x.Year() > 3000 {
					x = time.Date(2026, 1, 1, 0, 0, 0, 0, ny)
				}
			}
		})
	}
}

// TestNextBounded builds, past Parse's check, a schedule that never fires: Next must
// give up with the zero time after its horizon rather than loop.
func TestNextBounded(t *testing.T) {
	s := mustParse(t, "0 0 30 * *", mustZone(t, "Europe/Berlin"))
	s.month = field{bits: bitsOf(2)} // February 30th
	if s.fires() {
		t.Fatal("fires() accepts February 30th")
	}
	if got := s.Next(at(t, "2026-01-01 00:00:00 +0000")); !got.IsZero() {
		t.Fatalf("Next = %v, want the zero time", got)
	}
	if latest, n := s.MissedSince(at(t, "2020-01-01 00:00:00 +0000"), at(t, "2026-01-01 00:00:00 +0000"), 0); n != 0 || !latest.IsZero() {
		t.Fatalf("MissedSince = %v, %d", latest, n)
	}
}
