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

// maxFieldErrors bounds the problems one answer lists: a hostile document of a million
// bad list items (three bytes each: "-1,") must not build a million messages.
const maxFieldErrors = 1000

// add appends a problem at path, up to maxFieldErrors.
func (errs *FieldErrors) add(path, format string, args ...any) {
	if len(*errs) < maxFieldErrors {
		*errs = append(*errs, FieldError{Field: path, Message: fmt.Sprintf(format, args...)})
	}
}

// bounded is errs cut to maxFieldErrors, with a last problem that says the rest are not
// listed, when there are that many.
func (errs FieldErrors) bounded() FieldErrors {
	if len(errs) < maxFieldErrors {
		return errs
	}
	return append(errs[:maxFieldErrors:maxFieldErrors], FieldError{
		Message: fmt.Sprintf("an answer lists at most %d problems: more may not be listed", maxFieldErrors)})
}

// OrNil returns nil for an empty list, so callers can return it as an error.
func (errs FieldErrors) OrNil() error {
	if len(errs) == 0 {
		return nil
	}
	return errs
}
