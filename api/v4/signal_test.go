package v4

import "testing"

func TestParseSignal(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"10", 10, true}, {"SIGUSR1", 10, true}, {"usr2", 12, true}, {"Hup", 1, true}, {" 15 ", 15, true},
		{"0", 0, false}, {"65", 0, false}, {"-1", 0, false}, {"SIGFOO", 0, false}, {"", 0, false},
	} {
		got, err := ParseSignal(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseSignal(%q) = %d, %v; want %d (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
