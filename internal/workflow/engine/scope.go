package engine

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/api/v4/expr"
)

// scope is what "{{...}}" may name at one place: layers, each adding to its parent's, so
// that a DAG of thousands of tasks does not copy its outputs for every task.
type scope struct {
	vars   map[string]string
	parent *scope
}

func (s *scope) with(k, v string) *scope {
	return &scope{vars: map[string]string{k: v}, parent: s}
}

func (s *scope) withMap(m map[string]string) *scope {
	if len(m) == 0 {
		return s
	}
	return &scope{vars: m, parent: s}
}

func (s *scope) lookup(k string) (string, bool) {
	for l := s; l != nil; l = l.parent {
		if v, ok := l.vars[k]; ok {
			return v, true
		}
	}
	return "", false
}

// substitute replaces the placeholders of text from the scope, within the bound.
func (s *scope) substitute(text string) (string, error) {
	return expr.Substitute(text, maxSubstituted, s.lookup)
}

func (e *engine) workflowScope() *scope {
	m := map[string]string{"workflow.name": e.in.Name, "workflow.namespace": e.in.Namespace,
		"workflow.uid": e.in.UID, "workflow.mainEntrypoint": e.in.Spec.Entrypoint,
		"workflow.creationTimestamp": e.in.StartedAt.UTC().Format("2006-01-02T15:04:05Z")}
	for k, v := range argValues(e.in.Spec.Arguments) {
		m["workflow.parameters."+k] = v
	}
	return &scope{vars: m}
}

// argValues are the values of arguments' parameters (value, else default).
func argValues(a *v4.WfArguments) map[string]string {
	out := map[string]string{}
	if a == nil {
		return out
	}
	for _, p := range a.Parameters {
		switch {
		case p.Value != nil:
			out[p.Name] = *p.Value
		case p.Default != nil:
			out[p.Name] = *p.Default
		}
	}
	return out
}

// failures is {{workflow.failures}}: the failed Pod nodes as JSON, for exit handlers.
func failures(nodes map[string]v4.WfNodeStatus) string {
	type failure struct {
		DisplayName string `json:"displayName"`
		Message     string `json:"message"`
		Phase       string `json:"phase"`
	}
	var out []failure
	for _, id := range sortedIDs(nodes) {
		n := nodes[id]
		if n.Type == v4.WfNodePod && (n.Phase == v4.WfFailed || n.Phase == v4.WfError) && len(out) < 100 {
			out = append(out, failure{n.DisplayName, n.Message, n.Phase})
		}
	}
	b, _ := json.Marshal(out) // strings only
	return string(b)
}

// inputs resolves a template's input parameters from the call's arguments.
func inputs(t *v4.WfTemplate, args map[string]string, arts []v4.WfArtifact) (*v4.WfInputs, map[string]string, error) {
	if t.Inputs == nil {
		return nil, nil, nil
	}
	in := &v4.WfInputs{Artifacts: inputArtifacts(t.Inputs.Artifacts, arts)}
	vars := map[string]string{}
	for _, p := range t.Inputs.Parameters {
		v, ok := args[p.Name]
		switch {
		case ok:
		case p.Value != nil:
			v = *p.Value
		case p.Default != nil:
			v = *p.Default
		default:
			return nil, nil, fmt.Errorf("input parameter %q of template %q has no value", p.Name, t.Name)
		}
		if len(p.Enum) > 0 && !slices.Contains(p.Enum, v) {
			return nil, nil, fmt.Errorf("input parameter %q: %q is not one of its enum", p.Name, v)
		}
		in.Parameters = append(in.Parameters, v4.WfParameter{Name: p.Name, Value: &v})
		vars["inputs.parameters."+p.Name] = v
	}
	for _, a := range t.Inputs.Artifacts {
		vars["inputs.artifacts."+a.Name+".path"] = a.Path
	}
	return in, vars, nil
}

// inputArtifacts are a template's input artifacts with the source an argument of the
// same name gives (from, raw, http, git); the path and mode stay the template's.
func inputArtifacts(decl, args []v4.WfArtifact) []v4.WfArtifact {
	if len(decl) == 0 {
		return nil
	}
	out := slices.Clone(decl)
	for i := range out {
		for _, a := range args {
			if a.Name != out[i].Name {
				continue
			}
			out[i].From, out[i].Raw, out[i].HTTP, out[i].Git = a.From, a.Raw, a.HTTP, a.Git
			if a.Repository != nil {
				out[i].Repository = a.Repository
			}
		}
	}
	return out
}

// taskOf is the part of a template a Pod node runs, and where it runs.
type taskOf struct {
	Container  *v4.Container   `json:"container,omitempty"`
	Process    *v4.ProcessTask `json:"process,omitempty"`
	Script     *v4.WfScript    `json:"script,omitempty"`
	Constraint *v4.Constraint  `json:"constraint,omitempty"`
}

// resolveTask substitutes the placeholders of a running template's task (container,
// process or script) and constraint. It works on the JSON form, so every string field is covered, and
// escapes each value for JSON, so a value cannot add fields.
func resolveTask(t *v4.WfTemplate, sc *scope) (v4.WfTemplate, error) {
	b, err := json.Marshal(taskOf{t.Container, t.Process, t.Script, t.Constraint})
	if err != nil {
		return v4.WfTemplate{}, fmt.Errorf("encode template %q: %w", t.Name, err)
	}
	out, err := expr.Substitute(string(b), maxSubstituted, func(k string) (string, bool) {
		v, ok := sc.lookup(k)
		if !ok {
			return "", false
		}
		q, _ := json.Marshal(v) // a string always marshals
		return string(q[1 : len(q)-1]), true
	})
	if err != nil {
		return v4.WfTemplate{}, fmt.Errorf("template %q: %w", t.Name, err)
	}
	var task taskOf // fresh: decoding into the spec's own pointers would change the spec
	if err := json.Unmarshal([]byte(out), &task); err != nil {
		return v4.WfTemplate{}, fmt.Errorf("template %q after substitution: %w", t.Name, err)
	}
	r := *t
	r.Container, r.Process, r.Script, r.Constraint = task.Container, task.Process, task.Script, task.Constraint
	return r, nil
}

func findTemplate(ts []v4.WfTemplate, name string) *v4.WfTemplate {
	for i := range ts {
		if ts[i].Name == name {
			return &ts[i]
		}
	}
	return nil
}

// displayName is a path's last part: "flip" of "wf[0].flip", "(1:b)" of "wf.t(1:b)".
func displayName(path string) string {
	i := strings.LastIndexAny(path, ".[(")
	if i < 0 {
		return path
	}
	if path[i] == '.' {
		return path[i+1:]
	}
	return path[i:]
}

func sortedIDs(m map[string]v4.WfNodeStatus) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func nodeEqual(a, b v4.WfNodeStatus) bool { return reflect.DeepEqual(a, b) }
