package v4

import (
	"fmt"
	"strings"
)

// FieldError is one problem with one field, named by its JSON path
// (for example "spec.template.spec.processes[0].ports[1].name").
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (e FieldError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// FieldErrors collects every problem found in a document, so a user sees them all at once.
type FieldErrors []FieldError

func (errs FieldErrors) Error() string {
	switch len(errs) {
	case 0:
		return "no errors"
	case 1:
		return errs[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(errs))
	for _, e := range errs {
		b.WriteString("\n  - ")
		b.WriteString(e.Error())
	}
	return b.String()
}

// add appends a problem at path.
func (errs *FieldErrors) add(path, format string, args ...any) {
	*errs = append(*errs, FieldError{Field: path, Message: fmt.Sprintf(format, args...)})
}

// OrNil returns nil for an empty list, so callers can return it as an error.
func (errs FieldErrors) OrNil() error {
	if len(errs) == 0 {
		return nil
	}
	return errs
}
