package sim

import (
	"testing"
	"time"
)

// A light node beats at the interval its server asks for, in whole rounds of its beat
// scheduler, never more than that interval apart; with none asked, every round.
func TestBeatDue(t *testing.T) {
	const s = time.Second
	for _, c := range []struct {
		interval time.Duration
		gap      time.Duration // between two beats, the scheduler's rounds 3 s apart
	}{
		{0, 3 * s},
		{3 * s, 3 * s},
		{4 * s, 3 * s},
		{6 * s, 6 * s},
		{10 * s, 9 * s},
	} {
		gap := 3 * s // the first round after the last beat
		for !beatDue(gap, 3*s, c.interval) {
			gap += 3 * s
		}
		if gap != c.gap {
			t.Errorf("interval %s: beats %s apart, want %s", c.interval, gap, c.gap)
		}
		if !beatDue(time.Since(time.Time{}), 3*s, c.interval) {
			t.Errorf("interval %s: a node that never beat does not beat", c.interval)
		}
	}
}
