package v4

// Types of the exec stream (`berth exec`, docs/agent.md): the JSON frames of the
// berth-exec.v1 protocol that internal/execstream frames, shared by the CLI, the server,
// the agent and its drivers.

// TermSize is a terminal's size in characters: the payload of a resize frame, and what
// a driver sets on the terminal of an interactive command.
type TermSize struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

// ExecExit ends an exec session, the last frame: the command's exit code, or why it
// could not run.
type ExecExit struct {
	Code  int    `json:"code"`
	Error string `json:"error,omitempty"`
}
