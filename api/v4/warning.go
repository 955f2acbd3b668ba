package v4

// A Warning is something berth accepted in a document and tells its author about: a key
// that BCS declares and berth ignores (docs/compat.md). The API returns warnings with
// the answer (a Warning header each, and in apply's results), and the CLI prints them.
type Warning struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// String reads "spec.updatePolicy is ignored by berth (...)".
func (w Warning) String() string {
	if w.Field == "" {
		return w.Message
	}
	return w.Field + " " + w.Message
}

// maxWarnings bounds the warnings kept for one stream: a hostile document with a
// million ignored keys must not grow the answer without bound.
const maxWarnings = 100
