package scheduler

import (
	"path"
	"regexp"

	v4 "github.com/berthhq/berth/api/v4"
)

// LIKE matches the node's value against the text or any item of the set; UNLIKE is its
// negation (no item matches). A pattern matches as a shell glob or, failing that, as a
// regular expression anchored at both ends: BCS's unanchored regex let "slave1" match
// "myslave10", which nobody writing a host list expects. As in BCS, a non-text attribute
// passes and a missing one fails.
type likeEntry struct {
	name     string
	negate   bool
	any      bool
	patterns []pattern
	raw      []string
}

type pattern struct {
	glob string
	re   *regexp.Regexp // nil when the text is not a valid regex
}

func (p pattern) match(s string) bool {
	if ok, err := path.Match(p.glob, s); err == nil && ok {
		return true
	}
	return p.re != nil && p.re.MatchString(s)
}

func newLike(d *v4.ConstraintData) entry {
	e := &likeEntry{name: d.Name, negate: d.Operate == v4.OpUnlike}
	switch {
	case d.Type == v4.ValueText && d.Text != nil:
		e.raw = []string{d.Text.Value}
	case d.Type == v4.ValueSet && d.Set != nil:
		e.raw = d.Set.Item
	default:
		e.any = true
	}
	for _, s := range e.raw {
		re, err := regexp.Compile("^(?:" + s + ")$")
		if err != nil {
			re = nil
		}
		e.patterns = append(e.patterns, pattern{glob: s, re: re})
	}
	return e
}

func (e *likeEntry) ok(n *nodeState, _ *reqState) bool {
	text, decided, result := textAttr(n, e.name, e.any)
	if decided {
		return result
	}
	for _, p := range e.patterns {
		if p.match(text) {
			return !e.negate
		}
	}
	return e.negate
}

func (e *likeEntry) dynamic() bool { return false }

func (e *likeEntry) String() string {
	op := " LIKE "
	if e.negate {
		op = " UNLIKE "
	}
	if len(e.raw) == 1 {
		return e.name + op + e.raw[0]
	}
	return e.name + op + setString(e.raw)
}
