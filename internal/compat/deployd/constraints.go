package deployd

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/v1call"
)

// deployd's constraints were Swarm filters added to every deploy, one per type; their use
// was node maintenance: {type: node, equal: false, value: X} kept new pods off X. A soft
// one (deployd's default) only made Swarm prefer other nodes; a hard one refused X. berth
// serves the soft one with a PreferNoSchedule taint on X (the scheduler ranks X after
// every node that fits, docs/scheduling.md) and the hard one by disabling X; either way
// X's instances stay, and X is labelled to remember the constraint.

// ConstraintLabel marks the node a deployd node constraint names; a soft constraint's
// taint has it as its key.
const ConstraintLabel = "deployd.lain.io/constraint"

// softTaint is the taint of a soft node constraint.
var softTaint = v4.Taint{Key: ConstraintLabel, Value: "node", Effect: v4.TaintPreferNoSchedule}

// ConstraintSpec is deployd's constraint.
type ConstraintSpec struct {
	Type  string
	Equal bool
	Value string
	Soft  bool
}

// constraintType checks the type of a constraint; deployd's PATCH required it, its GET
// and DELETE took node when it was left out.
func constraintType(w http.ResponseWriter, r *http.Request, required bool) bool {
	t := r.URL.Query().Get("type")
	switch {
	case t == "" && required:
		writeError(w, http.StatusBadRequest, "query parameter type is required (node)")
		return false
	case t != "" && t != "node":
		writeError(w, http.StatusBadRequest, fmt.Sprintf("query parameter type=%q: berth maps node constraints only", t))
		return false
	}
	return true
}

// constraintCheckURL is where deployd's answers pointed.
const constraintCheckURL = "/api/constraints?type=node"

// constrainedNodes are the nodes a deployd constraint names, by name.
func (h *Handler) constrainedNodes(r *http.Request) ([]*v4.Node, *v1call.Answer) {
	nodes, a := v1call.List[*v4.Node](h.v1, r, "/v1/nodes")
	if a != nil {
		return nil, a
	}
	var out []*v4.Node
	for _, n := range nodes {
		if n.Metadata.Labels[ConstraintLabel] == "node" {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Metadata.Name < out[j].Metadata.Name })
	return out, nil
}

// existingConstraint answers the node constraint's nodes, or writes why there are none
// (a type berth does not map, no constraint, a failed read) and answers nil.
func (h *Handler) existingConstraint(w http.ResponseWriter, r *http.Request) []*v4.Node {
	if !constraintType(w, r, false) {
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
	n := nodes[0]
	writeJSON(w, http.StatusOK, ConstraintSpec{Type: "node", Equal: false, Value: n.Metadata.Name, Soft: slices.Contains(n.Spec.Taints, softTaint)})
}

// patchConstraint sets the node constraint, soft unless soft=false, as deployd took it:
// the node named is tainted (soft) or disabled (hard), and the one the constraint named
// before (one per type, as in deployd) released. 202, as deployd answered.
func (h *Handler) patchConstraint(w http.ResponseWriter, r *http.Request) {
	if !constraintType(w, r, true) {
		return
	}
	q := r.URL.Query()
	value := q.Get("value")
	equal, err := boolQuery(r, "equal", false)
	if err == nil && equal {
		err = fmt.Errorf("equal=true (every pod on one node) is not mapped by berth: give pod groups a constraint:node==X filter")
	}
	soft := true
	if err == nil {
		soft, err = boolQuery(r, "soft", true)
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
	if !h.constrain(w, r, value, true, soft) {
		return
	}
	for _, n := range before {
		if n.Metadata.Name != value && !h.constrain(w, r, n.Metadata.Name, false, false) {
			return
		}
	}
	writeJSON(w, http.StatusAccepted, accepted{Message: "Constraints will be patched", CheckURL: constraintCheckURL})
}

func (h *Handler) deleteConstraint(w http.ResponseWriter, r *http.Request) {
	nodes := h.existingConstraint(w, r)
	if nodes == nil {
		return
	}
	for _, n := range nodes {
		if !h.constrain(w, r, n.Metadata.Name, false, false) {
			return
		}
	}
	writeJSON(w, http.StatusAccepted, accepted{Message: "Constraint will be deleted from the orc engine.", CheckURL: constraintCheckURL})
}

// constrain sets (on) or releases the constraint on a node: the label, and the soft
// taint or the disabled flag. Releasing enables the node only when the constraint had
// disabled it; the node's other taints are kept. The patch is pinned to the revision
// read, so that a concurrent change is a conflict, not lost.
func (h *Handler) constrain(w http.ResponseWriter, r *http.Request, node string, on, soft bool) bool {
	n, a := v1call.Get[v4.Node](h.v1, r, v1call.Path("nodes", node))
	if a != nil {
		writeAnswerError(w, *a)
		return false
	}
	wasHard := n.Metadata.Labels[ConstraintLabel] == "node" && !slices.Contains(n.Spec.Taints, softTaint) && n.Spec.Disabled
	taints := slices.DeleteFunc(slices.Clone(n.Spec.Taints), func(t v4.Taint) bool { return t.Key == ConstraintLabel })
	disabled := n.Spec.Disabled
	var label any // null removes it
	switch {
	case on && soft:
		label, taints, disabled = "node", append(taints, softTaint), disabled && !wasHard
	case on:
		label, disabled = "node", true
	case wasHard:
		disabled = false
	}
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": n.Metadata.ResourceVersion, "labels": map[string]any{ConstraintLabel: label}},
		"spec":     map[string]any{"disabled": disabled, "taints": taints}})
	if a := h.v1.Call(r, http.MethodPatch, v1call.Path("nodes", node), nil, patch); !a.OK() {
		writeAnswerError(w, a)
		return false
	}
	return true
}
