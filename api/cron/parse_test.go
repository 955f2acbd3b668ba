package cron

import (
	"strings"
	"testing"
	"time"
)

func TestParseErrors(t *testing.T) {
	long := "0 0 * * *" + strings.Repeat(" ", MaxSpecLen)
	manyMinutes := strings.TrimSuffix(strings.Repeat("1,", maxListEntries+1), ",") + " * * * *"
	cases := []struct {
		spec, want string
		opts       Options
	}{
		{spec: "", want: "schedule is empty"},
		{spec: "   ", want: "schedule is empty"},
		{spec: long, want: "bytes long, at most 256"},
		{spec: "* * * *", want: "want 5 fields (minute hour day-of-month month day-of-week), got 4"},
		{spec: "0 * * * * *", want: "want 5 fields"},
		{spec: "61 * * * *", want: "minute: 61 is out of 0-59"},
		{spec: "* 24 * * *", want: "hour: 24 is out of 0-23"},
		{spec: "* * 0 * *", want: "day-of-month: 0 is out of 1-31"},
		{spec: "* * 32 * *", want: "day-of-month: 32 is out of 1-31"},
		{spec: "* * * 13 *", want: "month: 13 is out of 1-12"},
		{spec: "* * * 0 *", want: "month: 0 is out of 1-12"},
		{spec: "* * * * 8", want: "day-of-week: 8 is out of 0-7"},
		{spec: "* * * FOO *", want: `month: "FOO" is neither a number nor a name`},
		{spec: "* * * * MONDAY", want: `day-of-week: "MONDAY" is neither a number nor a name`},
		{spec: "* * * * JAN", want: `day-of-week: "JAN" is neither a number nor a name`},
		{spec: "MON * * * *", want: `minute: value "MON" is not a number`},
		{spec: "*/0 * * * *", want: "minute: step 0 is out of 1-59"},
		{spec: "*/60 * * * *", want: "minute: step 60 is out of 1-59"},
		{spec: "* */x * * *", want: `hour: step "x" is not a number`},
		{spec: "*/ * * * *", want: `minute: step "" is not a number`},
		{spec: "5-2 * * * *", want: `minute: range "5-2" starts after it ends`},
		{spec: "* * * * FRI-MON", want: `day-of-week: range "FRI-MON" starts after it ends`},
		{spec: "1,,2 * * * *", want: "minute: empty list entry"},
		{spec: "-1 * * * *", want: `minute: value "" is not a number`},
		{spec: "+1 * * * *", want: `minute: value "+1" is not a number`},
		{spec: "1-2-3 * * * *", want: `minute: value "2-3" is not a number`},
		{spec: "1000 * * * *", want: `minute: value "1000" is not a number`},
		{spec: "99999999999999999999 * * * *", want: `minute: value "99999999999999999999" is not a number`},
		{spec: manyMinutes, want: "minute: 65 list entries, at most 64"},
		{spec: "0 0 30 2 *", want: "schedule never fires"},
		{spec: "0 0 31 4,6,9,11 *", want: "schedule never fires"},
		{spec: "0 0 30,31 FEB ?", want: "schedule never fires"},
		{spec: "@every 10s", want: "@every: 10s fires more than once a minute"},
		{spec: "@every 59s", want: "@every: 59s fires more than once a minute"},
		{spec: "@every 500ms", want: "@every: 500ms is shorter than 1s", opts: Options{AllowSubMinute: true}},
		{spec: "@every -5m", want: "@every: -5m0s is shorter than 1s"},
		{spec: "@every", want: "@every: a duration is required"},
		{spec: "@every 5 minutes", want: `@every: "5 minutes" is not a duration`},
		{spec: "@everyday", want: `unknown shortcut "@everyday"`},
		{spec: "@every5m", want: `unknown shortcut "@every5m"`},
		{spec: "@every 1.5s", want: "@every: 1.5s is not a whole number of seconds", opts: Options{AllowSubMinute: true}},
		{spec: "@every 90.5s", want: "@every: 1m30.5s is not a whole number of seconds"},
		{spec: "@fortnightly", want: `unknown shortcut "@fortnightly"`},
		{spec: "@daily 0", want: `unknown shortcut "@daily 0"`},
		{spec: "CRON_TZ=UTC 0 0 * * *", want: "a time zone in the schedule is not supported: set timeZone"},
		{spec: "TZ=Europe/Berlin 0 0 * * *", want: "set timeZone"},
		{spec: "0 0 * * *\x00", want: `day-of-week: "*\x00" is neither a number nor a name`},
	}
	for _, c := range cases {
		_, err := Parse(c.spec, c.opts)
		if err == nil {
			t.Errorf("Parse(%q): no error, want %q", c.spec, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %q, want it to contain %q", c.spec, err, c.want)
		}
		if len(err.Error()) > 200 {
			t.Errorf("Parse(%q): error of %d bytes echoes too much input", c.spec, len(err.Error()))
		}
	}
}

// bitsOf lists the values of a field, to compare parsed fields.
func bitsOf(values ...int) uint64 {
	var b uint64
	for _, v := range values {
		b |= 1 << uint(v)
	}
	return b
}

func rangeBits(lo, hi, step int) uint64 {
	var b uint64
	for v := lo; v <= hi; v += step {
		b |= 1 << uint(v)
	}
	return b
}

func TestParseFields(t *testing.T) {
	all := func(lo, hi int) field { return field{bits: rangeBits(lo, hi, 1), star: true} }
	cases := []struct {
		spec                          string
		minute, hour, dom, month, dow field
	}{
		{"* * * * *", all(0, 59), all(0, 23), all(1, 31), all(1, 12), all(0, 6)},
		{"? ? ? ? ?", all(0, 59), all(0, 23), all(1, 31), all(1, 12), all(0, 6)},
		{"*/1 * * * *", all(0, 59), all(0, 23), all(1, 31), all(1, 12), all(0, 6)},
		{"*/15 */6 */10 */3 */2",
			field{bits: bitsOf(0, 15, 30, 45)}, field{bits: bitsOf(0, 6, 12, 18)},
			field{bits: bitsOf(1, 11, 21, 31)}, field{bits: bitsOf(1, 4, 7, 10)}, field{bits: bitsOf(0, 2, 4, 6)}},
		{"1-30/2 9-17 1,15 JAN-MAR,dec MON-FRI",
			field{bits: rangeBits(1, 30, 2)}, field{bits: rangeBits(9, 17, 1)}, field{bits: bitsOf(1, 15)},
			field{bits: bitsOf(1, 2, 3, 12)}, field{bits: rangeBits(1, 5, 1)}},
		{"5/20 0 1 1 7", field{bits: bitsOf(5, 25, 45)}, field{bits: bitsOf(0)}, field{bits: bitsOf(1)},
			field{bits: bitsOf(1)}, field{bits: bitsOf(0)}},
		{"0 0 1 1 5-7", field{bits: bitsOf(0)}, field{bits: bitsOf(0)}, field{bits: bitsOf(1)},
			field{bits: bitsOf(1)}, field{bits: bitsOf(0, 5, 6)}},
		{"0 0 1 1 sun,Sat", field{bits: bitsOf(0)}, field{bits: bitsOf(0)}, field{bits: bitsOf(1)},
			field{bits: bitsOf(1)}, field{bits: bitsOf(0, 6)}},
		{"0 0 1-31 * *", field{bits: bitsOf(0)}, field{bits: bitsOf(0)}, field{bits: rangeBits(1, 31, 1)},
			all(1, 12), all(0, 6)},
		{"@yearly", field{bits: bitsOf(0)}, field{bits: bitsOf(0)}, field{bits: bitsOf(1)}, field{bits: bitsOf(1)}, all(0, 6)},
		{"@annually", field{bits: bitsOf(0)}, field{bits: bitsOf(0)}, field{bits: bitsOf(1)}, field{bits: bitsOf(1)}, all(0, 6)},
		{"@monthly", field{bits: bitsOf(0)}, field{bits: bitsOf(0)}, field{bits: bitsOf(1)}, all(1, 12), all(0, 6)},
		{"@weekly", field{bits: bitsOf(0)}, field{bits: bitsOf(0)}, all(1, 31), all(1, 12), field{bits: bitsOf(0)}},
		{"@daily", field{bits: bitsOf(0)}, field{bits: bitsOf(0)}, all(1, 31), all(1, 12), all(0, 6)},
		{"@MIDNIGHT", field{bits: bitsOf(0)}, field{bits: bitsOf(0)}, all(1, 31), all(1, 12), all(0, 6)},
		{" @hourly ", field{bits: bitsOf(0)}, all(0, 23), all(1, 31), all(1, 12), all(0, 6)},
	}
	for _, c := range cases {
		s, err := Parse(c.spec, Options{})
		if err != nil {
			t.Errorf("Parse(%q): %v", c.spec, err)
			continue
		}
		got := []field{s.minute, s.hour, s.dom, s.month, s.dow}
		want := []field{c.minute, c.hour, c.dom, c.month, c.dow}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("Parse(%q) field %d = %+v, want %+v", c.spec, i, got[i], want[i])
			}
		}
	}
}

func TestParseAccepts(t *testing.T) {
	cases := []struct {
		spec  string
		opts  Options
		every time.Duration
	}{
		{spec: "0 0 29 2 *"},   // leap years only
		{spec: "0 0 30 2 MON"}, // either day field matches: every Monday of February
		{spec: "0 0 31 * *"},   // the months that have a 31st
		{spec: "@every 1m", every: time.Minute},
		{spec: "@every 1h30m", every: 90 * time.Minute},
		{spec: "@every 10s", opts: Options{AllowSubMinute: true}, every: 10 * time.Second},
		{spec: "@every 1s", opts: Options{AllowSubMinute: true}, every: time.Second},
		{spec: "@EVERY 2m", every: 2 * time.Minute},
		{spec: "0\t0 * *  *"},
	}
	for _, c := range cases {
		s, err := Parse(c.spec, c.opts)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.spec, err)
			continue
		}
		if s.Every() != c.every {
			t.Errorf("Parse(%q).Every() = %v, want %v", c.spec, s.Every(), c.every)
		}
		if s.String() != strings.TrimSpace(c.spec) || s.Location() != time.UTC {
			t.Errorf("Parse(%q): String %q, Location %v", c.spec, s.String(), s.Location())
		}
	}
}

func TestParseTimeZone(t *testing.T) {
	for _, name := range []string{"", "UTC", "Europe/Berlin", "America/New_York", "Asia/Kathmandu"} {
		loc, err := ParseTimeZone(name)
		if err != nil || loc == nil {
			t.Errorf("ParseTimeZone(%q): %v", name, err)
		}
	}
	bad := map[string]string{
		"Local":                      `timeZone: "Local" depends on the server`,
		"Mars/Olympus_Mons":          `timeZone: unknown time zone "Mars/Olympus_Mons"`,
		"../../../etc/passwd":        "timeZone: unknown time zone",
		"/etc/localtime":             "timeZone: unknown time zone",
		"Europe/../../etc/shadow":    "timeZone: unknown time zone",
		"Europe/Berlin\x00":          "timeZone: unknown time zone",
		strings.Repeat("A/", 40):     "timeZone: 80 bytes long, at most 64",
		"America/New_York/../Berlin": "timeZone: unknown time zone",
	}
	for name, want := range bad {
		_, err := ParseTimeZone(name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTimeZone(%q) = %v, want %q", name, err, want)
		}
	}
}
