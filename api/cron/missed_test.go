package cron

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestMissedSince(t *testing.T) {
	cases := []struct {
		name, zone, spec, last, now string
		deadline                    time.Duration
		latest                      string // "" when none
		n                           int
	}{
		{"hourly, three missed", "UTC", "@hourly", "2026-01-01 10:00:00 +0000", "2026-01-01 13:30:00 +0000",
			0, "2026-01-01 13:00:00 +0000", 3},
		{"now on a firing counts it", "UTC", "@hourly", "2026-01-01 10:00:00 +0000", "2026-01-01 13:00:00 +0000",
			0, "2026-01-01 13:00:00 +0000", 3},
		{"last itself is not missed", "UTC", "@hourly", "2026-01-01 10:00:00 +0000", "2026-01-01 10:59:59 +0000",
			0, "", 0},
		{"deadline drops the old ones", "UTC", "@hourly", "2026-01-01 10:00:00 +0000", "2026-01-01 13:30:00 +0000",
			45 * time.Minute, "2026-01-01 13:00:00 +0000", 1},
		{"deadline past every firing", "UTC", "@hourly", "2026-01-01 10:00:00 +0000", "2026-01-01 13:30:00 +0000",
			10 * time.Minute, "", 0},
		{"now before last", "UTC", "@hourly", "2026-01-01 10:00:00 +0000", "2026-01-01 09:00:00 +0000",
			0, "", 0},
		{"capped, latest still exact", "UTC", "* * * * *", "2026-01-01 00:00:00 +0000", "2026-06-01 12:34:56 +0000",
			0, "2026-06-01 12:34:00 +0000", MaxMissed},
		{"capped over years", "UTC", "0 9 * * MON-FRI", "2020-01-01 00:00:00 +0000", "2026-03-04 08:00:00 +0000",
			0, "2026-03-03 09:00:00 +0000", MaxMissed},
		{"leap day over years", "UTC", "0 0 29 2 *", "2025-01-01 00:00:00 +0000", "2030-01-01 00:00:00 +0000",
			0, "2028-02-29 00:00:00 +0000", 1},
		{"exactly a hundred", "UTC", "* * * * *", "2026-01-01 00:00:00 +0000", "2026-01-01 01:40:00 +0000",
			0, "2026-01-01 01:40:00 +0000", 100},
		{"zone and a fall-back", "America/New_York", "30 1 * * *", "2026-10-31 00:00:00 -0400", "2026-11-02 12:00:00 -0500",
			0, "2026-11-02 01:30:00 -0500", 3},
		{"every: from last", "UTC", "@every 5m", "2026-01-01 10:00:00 +0000", "2026-01-01 10:17:00 +0000",
			0, "2026-01-01 10:15:00 +0000", 3},
		{"every: deadline", "UTC", "@every 5m", "2026-01-01 10:00:00 +0000", "2026-01-01 10:17:00 +0000",
			6 * time.Minute, "2026-01-01 10:15:00 +0000", 1},
		{"every: deadline misses all", "UTC", "@every 5m", "2026-01-01 10:00:00 +0000", "2026-01-01 10:17:00 +0000",
			time.Minute, "", 0},
		{"every: a year, capped", "UTC", "@every 1m", "2025-01-01 10:00:00 +0000", "2026-01-01 10:00:30 +0000",
			0, "2026-01-01 10:00:00 +0000", MaxMissed},
		{"every: last with fractions", "UTC", "@every 1m", "2026-01-01 10:00:00.5 +0000", "2026-01-01 10:02:00.2 +0000",
			0, "2026-01-01 10:02:00 +0000", 2},
		{"every: from year one", "UTC", "@every 7s", "0001-01-01 00:00:00 +0000", "2026-01-01 00:00:05 +0000",
			0, "2026-01-01 00:00:03 +0000", MaxMissed}, // 2026-01-01 is 4 s past a multiple of 7 s
		{"every: last after now, deadline", "UTC", "@every 1m", "2026-01-01 10:00:00 +0000", "2026-01-01 09:00:00 +0000",
			time.Hour, "", 0},
		{"from year one", "UTC", "0 0 1 1 *", "0001-01-01 00:00:00 +0000", "2026-06-01 00:00:00 +0000",
			0, "2026-01-01 00:00:00 +0000", MaxMissed},
		{"before 1970", "UTC", "@daily", "1960-01-01 00:00:00 +0000", "1960-01-03 12:00:00 +0000",
			0, "1960-01-03 00:00:00 +0000", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			loc := mustZone(t, c.zone)
			s := mustParse(t, c.spec, loc)
			latest, n := s.MissedSince(at(t, c.last), at(t, c.now), c.deadline)
			var want time.Time
			if c.latest != "" {
				want = at(t, c.latest)
			}
			if n != c.n || !latest.Equal(want) {
				t.Fatalf("MissedSince = %v, %d; want %v, %d", latest, n, want, c.n)
			}
		})
	}
}

// TestMissedSinceProperty compares MissedSince with counting Next calls one by one.
func TestMissedSinceProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	specs := []string{"* * * * *", "*/7 * * * *", "0 */3 * * *", "30 2 * * *", "0 0 1,15 * MON",
		"0 0 29 2 *", "15 1 * * SUN", "@every 7m", "@every 1h"}
	for i := range 300 {
		zone := propertyZones[r.IntN(len(propertyZones))].name
		s := mustParse(t, specs[i%len(specs)], mustZone(t, zone))
		last := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(int64(3 * 365 * 24 * time.Hour))))
		now := last.Add(time.Duration(r.Int64N(int64([]time.Duration{time.Hour, 48 * time.Hour, 5 * 365 * 24 * time.Hour}[r.IntN(3)]))))
		var deadline time.Duration
		if r.IntN(3) == 0 {
			deadline = time.Duration(r.Int64N(int64(24 * time.Hour)))
		}
		begin := last
		if deadline > 0 && now.Add(-deadline).After(begin) {
			begin = now.Add(-deadline)
		}
		var want time.Time
		count := 0
		from := begin
		if s.Every() > 0 {
			from = last // an @every schedule's times are counted from last
		}
		for x := s.Next(from); !x.IsZero() && !x.After(now); x = s.Next(x) {
			if x.After(begin) {
				want, count = x, count+1
			}
			// Past the cap only the latest matters: skip to the last ten days (every
			// schedule here but the leap day fires in ten days), keeping an @every
			// schedule's phase.
			if skipTo := now.Add(-10 * 24 * time.Hour); count > MaxMissed && x.Before(skipTo) {
				if d := s.Every(); d > 0 {
					x = x.Add(skipTo.Sub(x) / d * d)
				} else {
					x = skipTo
				}
			}
		}
		latest, n := s.MissedSince(last, now, deadline)
		if n != min(count, MaxMissed) || !latest.Equal(want) {
			t.Fatalf("%q in %s, (%v, %v] deadline %v: MissedSince = %v, %d; counting gives %v, %d",
				s, zone, last, now, deadline, latest, n, want, count)
		}
	}
}
