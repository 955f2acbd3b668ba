package cli

import (
	"strings"
	"testing"
)

// Bad start delays, run times and exit codes fail before anything starts, naming the flag.
func TestSimTaskFlags(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--min-start-delay", "-1s"}, "--min-start-delay: it is negative"},
		{[]string{"--max-start-delay", "-1s"}, "--max-start-delay: it is negative"},
		{[]string{"--run-time", "-5s"}, "--run-time: it is negative"},
		{[]string{"--run-time", "2h"}, "--run-time: at most 1h0m0s"},
		{[]string{"--min-start-delay", "2s", "--max-start-delay", "1s"}, "--max-start-delay 1s is below --min-start-delay 2s"},
		{[]string{"--exit-codes", "0:9,1:1"}, "--exit-codes: the tasks exit only with --run-time"},
		{[]string{"--run-time", "1s", "--exit-codes", "0"}, `--exit-codes: "0": give CODE:WEIGHT`},
		{[]string{"--run-time", "1s", "--exit-codes", "256:1"}, `--exit-codes: "256:1": the code is 0 to 255`},
		{[]string{"--run-time", "1s", "--exit-codes", "1:0"}, `--exit-codes: "1:0": the weight is 1 to 1000000`},
		{[]string{"--run-time", "1s", "--exit-codes", "1:1,1:2"}, "--exit-codes: code 1 is given twice"},
		{[]string{"--run-time", "1s", "--full-agents"}, "--run-time: whole agents"},
		{[]string{"--run-time", "1s", "--follow-services"}, "--run-time: whole agents"},
	} {
		args := append([]string{"sim", "--server", "127.0.0.1:1", "--token", "berth-x.y", "--data-dir", dir}, c.args...)
		r := runCLI(t, "", "", args...)
		if r.err == nil || !strings.Contains(r.err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, r.err, c.want)
		}
	}
}
