package cli

import "testing"

// Seats and a queue wait below the least are refused by name before anything starts.
func TestServerSeatFlags(t *testing.T) {
	for _, c := range []struct{ flag, value, want string }{
		{"--api-agent-seats", "0", "--api-agent-seats 0: give at least 1"},
		{"--api-server-seats", "-1", "--api-server-seats -1: give at least 1"},
		{"--api-user-seats", "0", "--api-user-seats 0: give at least 1"},
		{"--api-queue-wait", "0s", "--api-queue-wait 0s: give a positive duration"},
	} {
		r := runCLI(t, "", "", "server", "--data-dir", t.TempDir(), c.flag, c.value)
		if r.err == nil {
			t.Fatalf("%s %s: started", c.flag, c.value)
		}
		wantContains(t, r.err.Error(), c.want)
	}
}
