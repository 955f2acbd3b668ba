package v4

import (
	"fmt"
	"strings"
)

// Validation is how strictly Parse reads a document (docs/spec.md "Validation modes").
// BCS's decoder (encoding/json into its types) dropped keys it did not know, kept the
// last of two equal keys and never checked some values; a document its users wrote
// against BCS must keep working, so by default berth accepts what BCS accepted and says
// with a Warning what it dropped, resolved or read its own way. Strict refuses instead.
type Validation int

const (
	// ValidateWarn accepts what BCS's decoder accepted, with a warning for each key
	// dropped, duplicate resolved or value read berth's way. It is the default.
	ValidateWarn Validation = iota
	// ValidateStrict refuses every document that would get a warning: each warning is
	// a field error instead.
	ValidateStrict
)

// String is the mode's name, as ParseValidation reads it.
func (v Validation) String() string {
	if v == ValidateStrict {
		return "strict"
	}
	return "warn"
}

// ParseValidation reads a mode's name: "warn" or "" (the default) and "strict", in any
// case. "true" and "false" are refused rather than guessed at: a boolean would not say
// which way it leans.
func ParseValidation(s string) (Validation, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "warn":
		return ValidateWarn, nil
	case "strict":
		return ValidateStrict, nil
	}
	return ValidateWarn, fmt.Errorf("validate=%q: must be \"strict\" or \"warn\"", truncate(s, 40))
}

// strictErrors turns a strict parse's warnings into the field errors that refuse it.
func strictErrors(warns []Warning) FieldErrors {
	errs := make(FieldErrors, 0, len(warns))
	for _, w := range warns {
		errs = append(errs, FieldError{Field: w.Field, Message: w.Message + " (refused: validate=strict)"})
	}
	return errs
}
