// Package expr is the small expression language of workflows (docs/workflows.md): the
// `depends` expressions of DAG tasks ("A && (B.Failed || C.Succeeded)"), the `when`
// conditions of steps and tasks ("{{inputs.parameters.x}} == 5") and the `{{...}}`
// parameter substitution they and other fields use. It is hand-written and evaluates
// nothing but what its grammar allows: a workflow's spec is an untrusted user's input
// and is read by the servers, so there is no eval of code, and every input, nesting and
// output is bounded.
//
// It lives under api/ because admission (api/v4's validation) parses every expression
// and api/ imports nothing of berth's internals; the workflow engine uses it too.
package expr

import (
	"fmt"
	"strings"
)

// Bounds on what is parsed: an expression is a field of a spec, read by every server.
const (
	MaxLen   = 4096 // bytes of one expression
	maxDepth = 64   // nesting of parentheses and '!'
)

// Error is a problem at a byte offset of the expression.
type Error struct {
	Pos int
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("at offset %d: %s", e.Pos, e.Msg) }

func errorAt(pos int, format string, args ...any) *Error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokIdent
	tokNumber
	tokString
	tokOp     // == != < <= > >=
	tokAnd    // &&
	tokOr     // ||
	tokNot    // !
	tokLParen // (
	tokRParen // )
)

type token struct {
	kind tokKind
	text string // an identifier, a number's text, a string's value, an operator
	pos  int
}

// lex splits s into tokens. Identifiers are words of letters, digits, '_', '-' and '.'
// (task names have '-', results follow a '.'), so "flip-coin.Succeeded" is one token.
func lex(s string) ([]token, error) {
	if len(s) > MaxLen {
		return nil, errorAt(0, "longer than %d bytes", MaxLen)
	}
	var toks []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(' || c == ')':
			toks = append(toks, token{map[byte]tokKind{'(': tokLParen, ')': tokRParen}[c], string(c), i})
			i++
		case c == '"' || c == '\'':
			t, n, err := lexString(s, i)
			if err != nil {
				return nil, err
			}
			toks, i = append(toks, t), n
		case strings.HasPrefix(s[i:], "&&"), strings.HasPrefix(s[i:], "||"):
			k := tokAnd
			if c == '|' {
				k = tokOr
			}
			toks, i = append(toks, token{k, s[i : i+2], i}), i+2
		case c == '=' || c == '!' || c == '<' || c == '>':
			t, n, err := lexOp(s, i)
			if err != nil {
				return nil, err
			}
			toks, i = append(toks, t), n
		case isNumberStart(s, i):
			j := i + 1
			for j < len(s) && (isDigit(s[j]) || s[j] == '.') {
				j++
			}
			toks, i = append(toks, token{tokNumber, s[i:j], i}), j
		case isWord(c):
			j := i
			for j < len(s) && isWord(s[j]) {
				j++
			}
			toks, i = append(toks, token{tokIdent, s[i:j], i}), j
		default:
			return nil, errorAt(i, "unexpected character %q", rune(c))
		}
	}
	return append(toks, token{tokEOF, "", len(s)}), nil
}

func lexOp(s string, i int) (token, int, error) {
	two := ""
	if i+1 < len(s) {
		two = s[i : i+2]
	}
	switch two {
	case "==", "!=", "<=", ">=":
		return token{tokOp, two, i}, i + 2, nil
	}
	switch s[i] {
	case '!':
		return token{tokNot, "!", i}, i + 1, nil
	case '<', '>':
		return token{tokOp, s[i : i+1], i}, i + 1, nil
	}
	return token{}, 0, errorAt(i, "'=' must be '=='")
}

// lexString reads a quoted string; a backslash escapes the next byte.
func lexString(s string, start int) (token, int, error) {
	q := s[start]
	var b strings.Builder
	for i := start + 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 >= len(s) {
				return token{}, 0, errorAt(i, "unfinished escape")
			}
			i++
			b.WriteByte(s[i])
		case q:
			return token{tokString, b.String(), start}, i + 1, nil
		default:
			b.WriteByte(s[i])
		}
	}
	return token{}, 0, errorAt(start, "unterminated string")
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c) || c == '_' || c == '-' || c == '.'
}

// isNumberStart reports a number: digits, or '-' or '.' followed by a digit, whose word
// is all digits and dots (so "1st-step" and "2a" are words, "-1.5" a number).
func isNumberStart(s string, i int) bool {
	j := i
	if s[j] == '-' {
		j++
	}
	if j >= len(s) || !(isDigit(s[j]) || s[j] == '.' && j+1 < len(s) && isDigit(s[j+1])) {
		return false
	}
	for k := j; k < len(s) && isWord(s[k]); k++ {
		if !isDigit(s[k]) && s[k] != '.' {
			return false
		}
	}
	return true
}
