package cron

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// maxListEntries bounds the comma-separated items of one field: 60 covers a minute
// field that lists every minute, and more than that is input meant to cost time.
const maxListEntries = 64

// fieldDef describes one of the five fields: its name in errors, its range and the names
// it accepts in place of numbers.
type fieldDef struct {
	name     string
	min, max int
	names    map[string]int
}

var (
	minuteField = fieldDef{name: "minute", min: 0, max: 59}
	hourField   = fieldDef{name: "hour", min: 0, max: 23}
	domField    = fieldDef{name: "day-of-month", min: 1, max: 31}
	monthField  = fieldDef{name: "month", min: 1, max: 12, names: map[string]int{
		"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6,
		"JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12,
	}}
	// dowField accepts 7 for Sunday as Vixie cron does; parseField folds it onto 0.
	dowField = fieldDef{name: "day-of-week", min: 0, max: 7, names: map[string]int{
		"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6,
	}}
)

// field is a parsed field: the set of values as bits, and whether it was written as
// an unrestricted `*` or `?` (star), which decides how day-of-month and day-of-week
// combine and how a schedule meets daylight-saving changes.
type field struct {
	bits uint64
	star bool
}

// parseField parses one field: a comma-separated list of `*`, `?`, values, ranges
// `a-b`, each with an optional `/step`; `a/step` means a through the maximum.
func parseField(s string, def fieldDef) (field, error) {
	items := strings.Split(s, ",")
	if len(items) > maxListEntries {
		return field{}, fmt.Errorf("%s: %d list entries, at most %d", def.name, len(items), maxListEntries)
	}
	var f field
	for _, item := range items {
		b, star, err := parseItem(item, def)
		if err != nil {
			return field{}, fmt.Errorf("%s: %w", def.name, err)
		}
		f.bits |= b
		// Only a field that is nothing but `*` (or `*/1`) is unrestricted, as in
		// Kubernetes' parser: `*/2` restricts the field.
		f.star = star && len(items) == 1
	}
	if def.max == 7 && f.bits&(1<<7) != 0 { // day-of-week 7 is Sunday
		f.bits = f.bits&^(1<<7) | 1
	}
	return f, nil
}

// parseItem parses one list item into its bits; star reports a whole-range `*` or `?`
// with a step of 1.
func parseItem(item string, def fieldDef) (b uint64, star bool, err error) {
	if item == "" {
		return 0, false, fmt.Errorf("empty list entry")
	}
	rng, stepStr, hasStep := strings.Cut(item, "/")
	step := 1
	if hasStep {
		step, err = parseNumber(stepStr, "step")
		if err != nil {
			return 0, false, err
		}
		if step < 1 || step > def.max {
			return 0, false, fmt.Errorf("step %d is out of 1-%d", step, def.max)
		}
	}
	lo, hi := def.min, def.max
	switch {
	case rng == "*" || rng == "?":
		star = step == 1
	case strings.Contains(rng, "-"):
		a, z, _ := strings.Cut(rng, "-")
		if lo, err = parseValue(a, def); err != nil {
			return 0, false, err
		}
		if hi, err = parseValue(z, def); err != nil {
			return 0, false, err
		}
		if lo > hi {
			return 0, false, fmt.Errorf("range %q starts after it ends", rng)
		}
	default:
		if lo, err = parseValue(rng, def); err != nil {
			return 0, false, err
		}
		if !hasStep { // a single value; `a/step` runs to the maximum
			hi = lo
		}
	}
	for v := lo; v <= hi; v += step {
		b |= 1 << uint(v)
	}
	return b, star, nil
}

// parseValue parses a number or, where the field has them, a name, and checks the range.
func parseValue(s string, def fieldDef) (int, error) {
	if v, ok := def.names[strings.ToUpper(s)]; ok {
		return v, nil
	}
	v, err := parseNumber(s, "value")
	if err != nil {
		if def.names != nil {
			return 0, fmt.Errorf("%q is neither a number nor a name", clip(s))
		}
		return 0, err
	}
	if v < def.min || v > def.max {
		return 0, fmt.Errorf("%d is out of %d-%d", v, def.min, def.max)
	}
	return v, nil
}

// parseNumber accepts only decimal digits (no sign, no spaces), and at most three, so
// that a huge number reads as out of range rather than as a parse failure.
func parseNumber(s, what string) (int, error) {
	if s == "" || len(s) > 3 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%s %q is not a number", what, clip(s))
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", what, clip(s), err)
	}
	return v, nil
}

// clip shortens a value quoted in an error, so that an error never echoes much input.
func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}

// nextBit returns the smallest set bit of b that is ≥ from, if any.
func nextBit(b uint64, from int) (int, bool) {
	if from >= 64 {
		return 0, false
	}
	rest := b &^ (1<<uint(from) - 1)
	if rest == 0 {
		return 0, false
	}
	return bits.TrailingZeros64(rest), true
}

// has reports whether bit v is set.
func has(b uint64, v int) bool { return b&(1<<uint(v)) != 0 }
