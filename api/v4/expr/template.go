package expr

import (
	"fmt"
	"strings"
)

// MaxKeyLen bounds the key of one placeholder ("tasks.train.outputs.parameters.model").
const MaxKeyLen = 256

// Placeholder is one "{{key}}" of a string, at byte offset Pos.
type Placeholder struct {
	Key string
	Pos int
	End int // the offset after its "}}"
}

// Placeholders lists the "{{...}}" of s with their keys trimmed of spaces. A "{{" left
// open, an empty or overlong key, or Argo's "{{=expression}}" (not supported) is an error.
func Placeholders(s string) ([]Placeholder, error) {
	var out []Placeholder
	for i := 0; ; {
		j := strings.Index(s[i:], "{{")
		if j < 0 {
			return out, nil
		}
		start := i + j
		k := strings.Index(s[start+2:], "}}")
		if k < 0 {
			return nil, errorAt(start, "'{{' is not closed by '}}'")
		}
		key := strings.TrimSpace(s[start+2 : start+2+k])
		switch {
		case key == "":
			return nil, errorAt(start, "empty '{{}}'")
		case strings.HasPrefix(key, "="):
			return nil, errorAt(start, "expression templates '{{=...}}' are not supported")
		case len(key) > MaxKeyLen:
			return nil, errorAt(start, "a key is at most %d bytes", MaxKeyLen)
		case strings.Contains(key, "{{"):
			return nil, errorAt(start, "'{{' inside '{{...}}'")
		}
		out = append(out, Placeholder{Key: key, Pos: start, End: start + 2 + k + 2})
		i = start + 2 + k + 2
	}
}

// ErrTooLong is returned by Substitute when the result would pass its bound.
type ErrTooLong struct{ Max int }

func (e *ErrTooLong) Error() string {
	return fmt.Sprintf("the substituted text passes %d bytes", e.Max)
}

// Substitute replaces each "{{key}}" of s by lookup(key). A key lookup does not know is an
// error, as is a result longer than max bytes (checked as it is built, so a hostile
// parameter repeated many times never builds a large string).
func Substitute(s string, max int, lookup func(key string) (string, bool)) (string, error) {
	phs, err := Placeholders(s)
	if err != nil {
		return "", err
	}
	if len(phs) == 0 {
		if len(s) > max {
			return "", &ErrTooLong{max}
		}
		return s, nil
	}
	var b strings.Builder
	last := 0
	for _, ph := range phs {
		v, ok := lookup(ph.Key)
		if !ok {
			return "", errorAt(ph.Pos, "unresolved {{%s}}", ph.Key)
		}
		if b.Len()+(ph.Pos-last)+len(v) > max {
			return "", &ErrTooLong{max}
		}
		b.WriteString(s[last:ph.Pos])
		b.WriteString(v)
		last = ph.End
	}
	if b.Len()+len(s)-last > max {
		return "", &ErrTooLong{max}
	}
	b.WriteString(s[last:])
	return b.String(), nil
}

// ParseWhen parses a `when` condition whose placeholders are not yet known, each standing
// for a word, so that admission refuses a condition that can never parse.
func ParseWhen(s string) (*Expr, error) {
	out, err := Substitute(s, MaxLen, func(string) (string, bool) { return "x", true })
	if err != nil {
		return nil, err
	}
	return Parse(out)
}

// EvalWhen substitutes a `when` condition's placeholders, then evaluates it with bare
// words as strings.
func EvalWhen(s string, lookup func(key string) (string, bool)) (bool, error) {
	out, err := Substitute(s, MaxLen, lookup)
	if err != nil {
		return false, err
	}
	e, err := Parse(out)
	if err != nil {
		return false, fmt.Errorf("%q: %w", truncate(out, 100), err)
	}
	return e.Eval(Words)
}
