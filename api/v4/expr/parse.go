package expr

import (
	"strconv"
	"strings"
)

// node is one part of a parsed expression.
type node interface{ pos() int }

type (
	// logical is && or ||.
	logical struct {
		op   tokKind
		l, r node
		at   int
	}
	compare struct {
		op   string
		l, r node
		at   int
	}
	not struct {
		x  node
		at int
	}
	// ident is a bare word: a task result in depends, a string in when.
	ident struct {
		name string
		at   int
	}
	literal struct {
		v  Value
		at int
	}
)

func (n *logical) pos() int { return n.at }
func (n *compare) pos() int { return n.at }
func (n *not) pos() int     { return n.at }
func (n *ident) pos() int   { return n.at }
func (n *literal) pos() int { return n.at }

// Expr is a parsed expression.
type Expr struct {
	src  string
	root node
}

// String returns the expression's source.
func (e *Expr) String() string { return e.src }

// Parse reads an expression:
//
//	or      = and { "||" and }
//	and     = unary { "&&" unary }
//	unary   = "!" unary | cmp
//	cmp     = primary [ ("==" | "!=" | "<" | "<=" | ">" | ">=") primary ]
//	primary = "(" or ")" | number | string | "true" | "false" | word
func Parse(s string) (*Expr, error) {
	toks, err := lex(s)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	if p.peek().kind == tokEOF {
		return nil, errorAt(0, "empty expression")
	}
	root, err := p.or(0)
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, errorAt(t.pos, "unexpected %q after the expression", t.text)
	}
	return &Expr{src: s, root: root}, nil
}

type parser struct {
	toks []token
	i    int
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func (p *parser) or(depth int) (node, error) {
	return p.chain(depth, tokOr, p.and)
}

func (p *parser) and(depth int) (node, error) {
	return p.chain(depth, tokAnd, p.unary)
}

// chain parses operands joined by op, left-associative.
func (p *parser) chain(depth int, op tokKind, operand func(int) (node, error)) (node, error) {
	l, err := operand(depth)
	if err != nil {
		return nil, err
	}
	for p.peek().kind == op {
		t := p.next()
		r, err := operand(depth)
		if err != nil {
			return nil, err
		}
		l = &logical{op: op, l: l, r: r, at: t.pos}
	}
	return l, nil
}

func (p *parser) unary(depth int) (node, error) {
	if depth > maxDepth {
		return nil, errorAt(p.peek().pos, "nested deeper than %d", maxDepth)
	}
	if t := p.peek(); t.kind == tokNot {
		p.next()
		x, err := p.unary(depth + 1)
		if err != nil {
			return nil, err
		}
		return &not{x: x, at: t.pos}, nil
	}
	l, err := p.primary(depth)
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind == tokOp {
		p.next()
		r, err := p.primary(depth)
		if err != nil {
			return nil, err
		}
		return &compare{op: t.text, l: l, r: r, at: t.pos}, nil
	}
	return l, nil
}

func (p *parser) primary(depth int) (node, error) {
	t := p.next()
	switch t.kind {
	case tokLParen:
		x, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		if c := p.next(); c.kind != tokRParen {
			return nil, errorAt(c.pos, "expected ')' to close the '(' at offset %d", t.pos)
		}
		return x, nil
	case tokNumber:
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil {
			return nil, errorAt(t.pos, "bad number %q", t.text)
		}
		return &literal{v: Number(f), at: t.pos}, nil
	case tokString:
		return &literal{v: String(t.text), at: t.pos}, nil
	case tokIdent:
		switch strings.ToLower(t.text) {
		case "true":
			return &literal{v: Bool(true), at: t.pos}, nil
		case "false":
			return &literal{v: Bool(false), at: t.pos}, nil
		}
		return &ident{name: t.text, at: t.pos}, nil
	case tokEOF:
		return nil, errorAt(t.pos, "unexpected end of the expression")
	}
	return nil, errorAt(t.pos, "unexpected %q", t.text)
}

// Words returns the bare words of the expression, in order, once each.
func (e *Expr) Words() []string {
	var out []string
	seen := map[string]bool{}
	walk(e.root, func(n node) {
		if id, ok := n.(*ident); ok && !seen[id.name] {
			seen[id.name] = true
			out = append(out, id.name)
		}
	})
	return out
}

func walk(n node, f func(node)) {
	f(n)
	switch n := n.(type) {
	case *logical:
		walk(n.l, f)
		walk(n.r, f)
	case *compare:
		walk(n.l, f)
		walk(n.r, f)
	case *not:
		walk(n.x, f)
	}
}
