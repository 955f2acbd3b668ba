package cli

import "fmt"

// ExitError asks cmd/berth to exit with Code. A command returns it when its outcome, not
// a failure, decides the status (berth plan: 2 when something cannot be placed); the
// command has printed its output already, so an empty Message prints nothing more.
type ExitError struct {
	Code    int
	Message string
}

func (e *ExitError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Message
}
