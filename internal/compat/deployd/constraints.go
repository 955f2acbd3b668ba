package deployd

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/v1call"
)

// deployd's constraints were Swarm filters added to every deploy, one per type; their use
// was node maintenance: {type: node, equal: false, value: X} kept new pods off X. berth
// disables the node (its instances stay, none is added), and labels it to remember the
// constraint.

// ConstraintLabel marks the node a deployd node constraint disabled.
const ConstraintLabel = "deployd.lain.io/constraint"

// ConstraintSpec is deployd's constraint.
type ConstraintSpec struct {
	Type  string
	Equal bool
	Value string
	Soft  bool
}

func constraintType(w http.ResponseWriter, r *http.Request) bool {
	if t := r.URL.Query().Get("type"); t != "" && t != "node" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("query parameter type=%q: berth maps node constraints only", t))
		return false
	}
	return true
}

// constrainedNodes are the nodes a deployd constraint disabled.
func (h *Handler) constrainedNodes(r *http.Request) ([]string, *v1call.Answer) {
	nodes, a := v1call.List[*v4.Node](h.v1, r, "/v1/nodes")
	if a != nil {
		return nil, a
	}
	var out []string
	for _, n := range nodes {
		if n.Metadata.Labels[ConstraintLabel] == "node" {
			out = append(out, n.Metadata.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// existingConstraint answers the node constraint's nodes, or writes why there are none
// (a type berth does not map, no constraint, a failed read) and answers nil.
func (h *Handler) existingConstraint(w http.ResponseWriter, r *http.Request) []string {
	if !constraintType(w, r) {
		return nil
	}
	nodes, a := h.constrainedNodes(r)
	if a != nil {
		writeAnswerError(w, *a)
		return nil
	}
	if len(nodes) == 0 {
		writeError(w, http.StatusNotFound, "no node constraint")
		return nil
	}
	return nodes
}

func (h *Handler) getConstraint(w http.ResponseWriter, r *http.Request) {
	nodes := h.existingConstraint(w, r)
	if nodes == nil {
		return
	}
	writeJSON(w, http.StatusOK, ConstraintSpec{Type: "node", Equal: false, Value: nodes[0]})
}

// patchConstraint sets the node constraint: the node named is disabled, and the one the
// constraint named before (one per type, as in deployd) enabled again.
func (h *Handler) patchConstraint(w http.ResponseWriter, r *http.Request) {
	if !constraintType(w, r) {
		return
	}
	q := r.URL.Query()
	value := q.Get("value")
	equal, err := boolQuery(r, "equal", false)
	if err == nil && equal {
		err = fmt.Errorf("equal=true (every pod on one node) is not mapped by berth: give pod groups a constraint:node==X filter")
	}
	if err == nil {
		var soft bool
		if soft, err = boolQuery(r, "soft", false); err == nil && soft {
			err = fmt.Errorf("soft=true: berth has no soft constraints")
		}
	}
	if err == nil && value == "" {
		err = fmt.Errorf("query parameter value is required (the node to keep pods off)")
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	before, a := h.constrainedNodes(r)
	if a != nil {
		writeAnswerError(w, *a)
		return
	}
	if !h.constrain(w, r, value, true) {
		return
	}
	for _, n := range before {
		if n != value && !h.constrain(w, r, n, false) {
			return
		}
	}
	writeJSON(w, http.StatusOK, ConstraintSpec{Type: "node", Value: value})
}

func (h *Handler) deleteConstraint(w http.ResponseWriter, r *http.Request) {
	nodes := h.existingConstraint(w, r)
	if nodes == nil {
		return
	}
	for _, n := range nodes {
		if !h.constrain(w, r, n, false) {
			return
		}
	}
	writeJSON(w, http.StatusOK, ConstraintSpec{Type: "node", Value: nodes[0]})
}

// constrain disables (on) or enables a node with the constraint label.
func (h *Handler) constrain(w http.ResponseWriter, r *http.Request, node string, on bool) bool {
	var label any // null removes it
	if on {
		label = "node"
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{ConstraintLabel: label}},
		"spec": map[string]any{"disabled": on}})
	a := h.v1.Call(r, http.MethodPatch, v1call.Path("nodes", node), nil, patch)
	if !a.OK() {
		writeAnswerError(w, a)
		return false
	}
	return true
}
