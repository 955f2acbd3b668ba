package cron

import (
	"strings"
	"testing"
	"time"
)

// FuzzParse feeds Parse arbitrary text: it must never panic, errors must stay short,
// and a schedule it accepts must fire after any time it is asked about, at a time
// the fields match, within the search horizon.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"* * * * *", "*/5 * * * *", "1-30/2 9-17 1,15 JAN-MAR,dec MON-FRI", "0 0 29 2 *", "0 0 30 2 *",
		"0 0 31 4,6,9,11 *", "5/20 0 1 1 7", "? ? ? ? ?", "0 0 13 * FRI", "@hourly", "@yearly", "@every 90s",
		"@every 10s", "@every 1h30m", "@every -1s", "CRON_TZ=UTC * * * * *", "61 * * * *", "1,,2 * * * *",
		"*/0 * * * *", "5-2 * * * *", "0 0 * * 7", "0 2 * * *", "30 * * * *", "0-59/59 0-23/23 31 12 6",
	} {
		f.Add(seed, int64(1_790_000_000), uint8(2))
	}
	zones := []string{"UTC", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Pacific/Apia"}
	locs := make([]*time.Location, len(zones))
	for i, z := range zones {
		locs[i] = mustZone(f, z)
	}
	f.Fuzz(func(t *testing.T, spec string, unix int64, zone uint8) {
		loc := locs[int(zone)%len(locs)]
		s, err := Parse(spec, Options{Location: loc, AllowSubMinute: zone%2 == 0})
		if err != nil {
			if len(err.Error()) > 300 {
				t.Fatalf("Parse(%q): error of %d bytes", spec, len(err.Error()))
			}
			return
		}
		if _, err := Parse(s.String(), Options{Location: loc, AllowSubMinute: true}); err != nil {
			t.Fatalf("Parse(%q) accepted, Parse(String() %q) = %v", spec, s.String(), err)
		}
		// Keep the time within years the zone database describes well.
		after := time.Unix(1_000_000_000+unix%2_000_000_000, 0)
		next := s.Next(after)
		if next.IsZero() || !next.After(after) {
			t.Fatalf("%q in %v: Next(%v) = %v", spec, loc, after, next)
		}
		if s.Every() == 0 && !refFires(s, next) {
			t.Fatalf("%q in %v: Next(%v) = %v, which the fields do not match", spec, loc, after, next)
		}
		if !strings.HasPrefix(strings.ToLower(s.String()), "@every") && s.Every() != 0 {
			t.Fatalf("%q: Every() = %v", spec, s.Every())
		}
		s.MissedSince(after, next.Add(time.Hour), 0)
	})
}
