package v4

import (
	"fmt"
	"strconv"
	"strings"
)

// signalNumbers are the signals a task may be sent by name (Linux numbers), with and
// without "SIG", in any case. Others are sent by number.
var signalNumbers = map[string]int{
	"HUP": 1, "INT": 2, "QUIT": 3, "ABRT": 6, "KILL": 9, "USR1": 10, "SEGV": 11, "USR2": 12,
	"PIPE": 13, "ALRM": 14, "TERM": 15, "CONT": 18, "STOP": 19, "TSTP": 20, "WINCH": 28,
}

// MaxSignal is the largest signal number (Linux's SIGRTMAX).
const MaxSignal = 64

// ParseSignal reads a signal as a number (1-64) or a name ("HUP", "SIGUSR1", "usr2").
func ParseSignal(s string) (int, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 || n > MaxSignal {
			return 0, fmt.Errorf("signal %d is not between 1 and %d", n, MaxSignal)
		}
		return n, nil
	}
	if n, ok := signalNumbers[strings.TrimPrefix(strings.ToUpper(s), "SIG")]; ok {
		return n, nil
	}
	return 0, fmt.Errorf("signal %q is neither a number (1-%d) nor a signal name (HUP, INT, TERM, USR1, USR2, ...)", truncate(s, 40), MaxSignal)
}
