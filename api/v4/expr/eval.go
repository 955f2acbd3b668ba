package expr

import (
	"fmt"
	"strconv"
	"strings"
)

// Value is a string, a number or a boolean.
type Value struct {
	kind valueKind
	s    string
	n    float64
	b    bool
}

type valueKind int

const (
	kindString valueKind = iota
	kindNumber
	kindBool
)

// String, Number and Bool make values.
func String(s string) Value  { return Value{kind: kindString, s: s} }
func Number(f float64) Value { return Value{kind: kindNumber, n: f} }
func Bool(b bool) Value      { return Value{kind: kindBool, b: b} }

func (v Value) String() string {
	switch v.kind {
	case kindNumber:
		return strconv.FormatFloat(v.n, 'g', -1, 64)
	case kindBool:
		return strconv.FormatBool(v.b)
	}
	return v.s
}

// number is v as a number, when it is one or a string that reads as one.
func (v Value) number() (float64, bool) {
	switch v.kind {
	case kindNumber:
		return v.n, true
	case kindString:
		f, err := strconv.ParseFloat(strings.TrimSpace(v.s), 64)
		return f, err == nil
	}
	return 0, false
}

// truth is v as a condition: a boolean, or the strings "true" and "false".
func (v Value) truth() (bool, bool) {
	switch {
	case v.kind == kindBool:
		return v.b, true
	case v.kind == kindString && strings.EqualFold(v.s, "true"):
		return true, true
	case v.kind == kindString && strings.EqualFold(v.s, "false"):
		return false, true
	}
	return false, false
}

// Env gives the value of a bare word.
type Env func(word string) (Value, error)

// Words is the Env of `when`: a bare word is the string it spells, as in Argo
// ("{{steps.flip.outputs.result}} == heads").
func Words(word string) (Value, error) { return String(word), nil }

// Eval evaluates the expression as a condition.
func (e *Expr) Eval(env Env) (bool, error) {
	v, err := eval(e.root, env)
	if err != nil {
		return false, err
	}
	b, ok := v.truth()
	if !ok {
		return false, errorAt(0, "%q is not true or false", truncate(v.String(), 60))
	}
	return b, nil
}

func eval(n node, env Env) (Value, error) {
	switch n := n.(type) {
	case *literal:
		return n.v, nil
	case *ident:
		v, err := env(n.name)
		if err != nil {
			return Value{}, errorAt(n.at, "%v", err)
		}
		return v, nil
	case *not:
		b, err := evalBool(n.x, env)
		return Bool(!b), err
	case *logical:
		return evalLogical(n, env)
	case *compare:
		l, err := eval(n.l, env)
		if err != nil {
			return Value{}, err
		}
		r, err := eval(n.r, env)
		if err != nil {
			return Value{}, err
		}
		return compareValues(n, l, r)
	}
	return Value{}, fmt.Errorf("unknown node %T", n) // unreachable: parse builds only these
}

func evalBool(n node, env Env) (bool, error) {
	v, err := eval(n, env)
	if err != nil {
		return false, err
	}
	b, ok := v.truth()
	if !ok {
		return false, errorAt(n.pos(), "%q is not true or false", truncate(v.String(), 60))
	}
	return b, nil
}

// evalLogical short-circuits, so a word on the side not taken is not looked up.
func evalLogical(n *logical, env Env) (Value, error) {
	l, err := evalBool(n.l, env)
	if err != nil {
		return Value{}, err
	}
	if n.op == tokAnd && !l || n.op == tokOr && l {
		return Bool(l), nil
	}
	r, err := evalBool(n.r, env)
	return Bool(r), err
}

// compareValues compares as numbers when both sides read as numbers, else as strings.
func compareValues(n *compare, l, r Value) (Value, error) {
	c := 0
	ln, lok := l.number()
	rn, rok := r.number()
	switch {
	case lok && rok:
		c = cmpOrdered(ln, rn)
	default:
		c = strings.Compare(l.String(), r.String())
	}
	switch n.op {
	case "==":
		return Bool(c == 0), nil
	case "!=":
		return Bool(c != 0), nil
	case "<":
		return Bool(c < 0), nil
	case "<=":
		return Bool(c <= 0), nil
	case ">":
		return Bool(c > 0), nil
	case ">=":
		return Bool(c >= 0), nil
	}
	return Value{}, errorAt(n.at, "unknown operator %q", n.op)
}

func cmpOrdered(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
