package agent

import v4 "github.com/berthhq/berth/api/v4"

// maxReportBytes bounds the statuses one request carries, well below the server's body
// limit (2 MiB by default): a workflow step's status carries its outputs (up to
// v4.MaxStepOutputBytes), so a hundred of them no longer fit in one request.
const maxReportBytes = 1 << 20

// statusBaseBytes is about what a status without step outputs weighs as JSON.
const statusBaseBytes = 4 << 10

// statusBytes estimates a status's weight as JSON without encoding it: a base, plus
// what a step's result carries.
func statusBytes(st *v4.TaskGroupStatus) int {
	n := statusBaseBytes
	s := st.Step
	if s == nil {
		return n
	}
	n += len(s.Error)
	if s.Result != nil {
		n += len(*s.Result)
	}
	for _, p := range s.Parameters {
		n += len(p.Name) + 32
		if p.Value != nil {
			n += len(*p.Value)
		}
	}
	for _, a := range s.Artifacts {
		n += len(a.Name) + len(a.Key) + len(a.Repository) + len(a.Digest) + 64
	}
	return n
}
