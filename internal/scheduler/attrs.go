package scheduler

import (
	"slices"
	"strconv"
	"strings"
)

// attrKind is the type of a node attribute (BCS types 1, 3 and 4).
type attrKind uint8

const (
	attrText attrKind = iota + 1
	attrScalar
	attrSet
)

// attrValue is one node's value of an attribute.
type attrValue struct {
	kind   attrKind
	text   string
	scalar float64
	set    []string
}

// hostnameAttr is built in: it comes from the node, never from attributes.
const hostnameAttr = "hostname"

// attr looks an attribute up: hostname from the node, then text, scalar and set
// attributes, then node labels (as text).
func (n *nodeState) attr(name string) (attrValue, bool) {
	if name == hostnameAttr {
		return attrValue{kind: attrText, text: n.hostname}, true
	}
	if v, ok := n.text[name]; ok {
		return attrValue{kind: attrText, text: v}, true
	}
	if v, ok := n.scalar[name]; ok {
		return attrValue{kind: attrScalar, scalar: v}, true
	}
	if v, ok := n.set[name]; ok {
		return attrValue{kind: attrSet, set: v}, true
	}
	if v, ok := n.labels[name]; ok {
		return attrValue{kind: attrText, text: v}, true
	}
	return attrValue{}, false
}

// key is the value recorded on a task group and counted by UNIQUE, MAXPER and GROUPBY.
func (v attrValue) key() string {
	switch v.kind {
	case attrScalar:
		return strconv.FormatFloat(v.scalar, 'g', -1, 64)
	case attrSet:
		s := slices.Clone(v.set)
		slices.Sort(s)
		return strings.Join(s, ",")
	}
	return v.text
}
