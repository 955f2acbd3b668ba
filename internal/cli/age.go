package cli

import (
	"fmt"
	"time"
)

// age formats the time since t like kubectl's AGE column ("45s", "5m30s", "3h", "12d").
func age(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return humanDuration(now.Sub(t))
}

// humanDuration keeps two units while the larger one is small and one unit afterwards,
// so a column of ages stays short yet precise where precision matters.
func humanDuration(d time.Duration) string {
	seconds := int(d.Seconds())
	switch {
	case seconds < -1:
		return "<invalid>" // clock skew of more than a second
	case seconds < 0:
		return "0s"
	case seconds < 2*60:
		return fmt.Sprintf("%ds", seconds)
	}
	minutes := int(d / time.Minute)
	switch {
	case minutes < 10:
		return withSub(minutes, "m", seconds%60, "s")
	case minutes < 3*60:
		return fmt.Sprintf("%dm", minutes)
	}
	hours := int(d / time.Hour)
	switch {
	case hours < 8:
		return withSub(hours, "h", minutes%60, "m")
	case hours < 48:
		return fmt.Sprintf("%dh", hours)
	case hours < 8*24:
		return withSub(hours/24, "d", hours%24, "h")
	case hours < 2*365*24:
		return fmt.Sprintf("%dd", hours/24)
	case hours < 8*365*24:
		return withSub(hours/24/365, "y", (hours/24)%365, "d")
	}
	return fmt.Sprintf("%dy", hours/24/365)
}

func withSub(n int, unit string, sub int, subUnit string) string {
	if sub == 0 {
		return fmt.Sprintf("%d%s", n, unit)
	}
	return fmt.Sprintf("%d%s%d%s", n, unit, sub, subUnit)
}
