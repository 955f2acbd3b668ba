package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/api/v4/expr"
)

// stepCall is a step's or task's call of a template.
type stepCall struct {
	path     string
	step     *v4.WfStep
	scope    *scope
	boundary string
	depth    int
	limit    *limiter
	lib      []v4.WfTemplate // where the step's template names resolve
}

// callStep runs a step or task: its loop's items under a TaskGroup node, or the one
// call; each only when its `when` holds; then its exit handler.
func (e *engine) callStep(sc stepCall) v4.WfNodeStatus {
	if n, ok := e.nodes[NodeID(e.in.UID, sc.path, 0)]; ok && v4.WfPhaseFinished(n.Phase) && sc.step.OnExit == "" {
		return n
	}
	items, loop, err := e.items(sc.step, sc.scope)
	if err != nil {
		return e.errorNode(sc.path, sc.boundary, err.Error())
	}
	var n v4.WfNodeStatus
	if loop {
		n = e.loop(sc, items)
	} else {
		n = e.single(sc.path, sc, sc.scope, nil)
	}
	if sc.step.OnExit == "" || !v4.WfPhaseFinished(n.Phase) {
		return n
	}
	status := n.Phase
	h := e.run(call{path: sc.path + ".onExit", tmpl: findTemplate(sc.lib, sc.step.OnExit),
		scope: sc.scope.with("workflow.status", status), boundary: sc.boundary, depth: sc.depth, limit: sc.limit, lib: sc.lib})
	e.link(sc.boundary, h)
	if !v4.WfPhaseFinished(h.Phase) {
		n.Phase = v4.WfRunning // its caller waits for the exit handler
	}
	return n
}

// single runs one call of the step's template at path, in scope with a loop's item.
func (e *engine) single(path string, sc stepCall, s *scope, item *v4.WfItem) v4.WfNodeStatus {
	n, ok := e.nodes[NodeID(e.in.UID, path, 0)]
	if ok && v4.WfPhaseFinished(n.Phase) {
		return n
	}
	tmpl, ref, lib := e.resolve(sc.step, sc.lib)
	if tmpl == nil {
		return e.errorNode(path, sc.boundary, fmt.Sprintf("unknown template %q", sc.step.Template))
	}
	if ok && n.Type == v4.WfNodePod && tmpl.ActiveDeadlineSeconds == 0 {
		return n // started, and nothing to check until it ends: the common case of a wide loop
	}
	if item != nil {
		s = s.withMap(itemVars(*item))
	}
	if _, started := e.nodes[NodeID(e.in.UID, path, 0)]; !started && sc.step.When != "" {
		ok, err := expr.EvalWhen(sc.step.When, s.lookup)
		switch {
		case err != nil:
			return e.errorNode(path, sc.boundary, "when: "+err.Error())
		case !ok:
			n := e.newNode(path, 0, v4.WfNodeSkipped, tmpl.Name, sc.boundary)
			return e.end(n, v4.WfSkipped, fmt.Sprintf("when %q evaluated false", sc.step.When))
		}
	}
	args := map[string]string{}
	if a := sc.step.Arguments; a != nil {
		for _, p := range a.Parameters {
			if p.Value == nil {
				continue
			}
			v, err := s.substitute(*p.Value)
			if err != nil {
				return e.errorNode(path, sc.boundary, fmt.Sprintf("argument %q: %v", p.Name, err))
			}
			args[p.Name] = v
		}
	}
	var arts []v4.WfArtifact
	if a := sc.step.Arguments; a != nil {
		for _, art := range a.Artifacts {
			if art.From != "" {
				v, err := s.substitute(art.From)
				if err != nil && art.Optional {
					continue // an optional artifact of a step that made none (skipped by its when) is left out
				}
				if err != nil {
					return e.errorNode(path, sc.boundary, fmt.Sprintf("artifact %q: %v", art.Name, err))
				}
				art.From = v
			}
			arts = append(arts, art)
		}
	}
	return e.run(call{path: path, tmpl: tmpl, ref: ref, args: args, arts: arts, scope: e.wfScope.withMap(itemVarsOf(s)),
		boundary: sc.boundary, depth: sc.depth, limit: sc.limit, lib: lib})
}

// itemVarsOf keeps {{workflow.status}} of a caller's scope (an exit handler's) for the
// called template. Like Argo, {{item}} reaches a called template only through arguments.
func itemVarsOf(s *scope) map[string]string {
	out := map[string]string{}
	if v, ok := s.lookup("workflow.status"); ok {
		out["workflow.status"] = v
	}
	return out
}

// resolve finds the template a step calls, and where that template's own steps find
// theirs: one of lib (the caller's), or of a workflowtemplate by templateRef.
func (e *engine) resolve(s *v4.WfStep, lib []v4.WfTemplate) (*v4.WfTemplate, *v4.WfTemplateRef, []v4.WfTemplate) {
	if r := s.TemplateRef; r != nil {
		wt := e.in.Refs[r.Name]
		if wt == nil {
			return nil, r, nil
		}
		return findTemplate(wt.Spec.Templates, r.Template), r, wt.Spec.Templates
	}
	return findTemplate(lib, s.Template), nil, lib
}

// loop runs one call per item, each at "path(i:item)", under a TaskGroup node that
// finishes when they all have: Failed when any failed.
func (e *engine) loop(sc stepCall, items []v4.WfItem) v4.WfNodeStatus {
	n := e.newNode(sc.path, 0, v4.WfNodeTaskGroup, sc.step.Template, sc.boundary)
	if v4.WfPhaseFinished(n.Phase) {
		return n
	}
	n.Phase = v4.WfRunning
	e.put(n)
	done, failed := true, 0
	for i, item := range items {
		label := item.String()
		if len(label) > maxItemLabel {
			label = label[:maxItemLabel]
		}
		child := e.single(sc.path+"("+strconv.Itoa(i)+":"+label+")", sc, sc.scope, &item)
		e.link(n.ID, child)
		switch {
		case !v4.WfPhaseFinished(child.Phase):
			done = false
		case failedPhase(child.Phase):
			failed++
		}
	}
	if !done {
		return e.nodes[n.ID]
	}
	if failed > 0 {
		return e.end(e.nodes[n.ID], v4.WfFailed, fmt.Sprintf("%d of %d items failed", failed, len(items)))
	}
	return e.end(e.nodes[n.ID], v4.WfSucceeded, "")
}

func itemVars(item v4.WfItem) map[string]string {
	m := map[string]string{"item": item.String()}
	for k, v := range item.Fields {
		m["item."+k] = v
	}
	return m
}

// items lists a step's loop items (withItems, withParam's JSON list, withSequence), at
// most v4.MaxWfLoopItems; loop is false for a step without a loop.
func (e *engine) items(s *v4.WfStep, sc *scope) (items []v4.WfItem, loop bool, err error) {
	switch {
	case len(s.WithItems) > 0:
		return s.WithItems, true, nil
	case s.WithParam != "":
		text, err := sc.substitute(s.WithParam)
		if err != nil {
			return nil, true, fmt.Errorf("withParam: %w", err)
		}
		items, err := parseItems(text)
		return items, true, err
	case s.WithSequence != nil:
		q := s.WithSequence
		var f [3]string
		for i, v := range []string{q.Count, q.Start, q.End} {
			if f[i], err = sc.substitute(v); err != nil {
				return nil, true, fmt.Errorf("withSequence: %w", err)
			}
		}
		list, err := v4.ExpandWfSequence(f[0], f[1], f[2], q.Format)
		if err != nil {
			return nil, true, fmt.Errorf("withSequence: %w", err)
		}
		for _, v := range list {
			items = append(items, v4.WfItem{Value: v})
		}
		return items, true, nil
	}
	return nil, false, nil
}

// parseItems reads withParam's JSON list.
func parseItems(text string) ([]v4.WfItem, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.UseNumber()
	var raw []json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("withParam: not a JSON list: %w", err)
	}
	if len(raw) > v4.MaxWfLoopItems {
		return nil, fmt.Errorf("withParam: %d items, more than %d", len(raw), v4.MaxWfLoopItems)
	}
	items := make([]v4.WfItem, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &items[i]); err != nil {
			// A nested value is passed as its JSON text.
			items[i] = v4.WfItem{Value: string(r)}
		}
	}
	return items, nil
}

// childVars adds what "{{steps.X...}}" or "{{tasks.X...}}" gives of a finished child.
func childVars(vars map[string]string, prefix, name string, n v4.WfNodeStatus, nodes map[string]v4.WfNodeStatus) {
	base := prefix + "." + name + "."
	vars[base+"status"], vars[base+"id"] = n.Phase, n.ID
	vars[base+"startedAt"] = n.StartedAt.UTC().Format("2006-01-02T15:04:05Z")
	vars[base+"finishedAt"] = n.FinishedAt.UTC().Format("2006-01-02T15:04:05Z")
	if n.Type == v4.WfNodeTaskGroup { // a loop: its items' outputs as JSON lists
		var params []map[string]string
		var results []string
		for _, id := range n.Children {
			c := nodes[id]
			m := map[string]string{}
			if o := c.Outputs; o != nil {
				for _, p := range o.Parameters {
					if p.Value != nil {
						m[p.Name] = *p.Value
					}
				}
				if o.Result != nil {
					results = append(results, *o.Result)
				}
			}
			params = append(params, m)
		}
		b, _ := json.Marshal(params)
		r, _ := json.Marshal(results)
		vars[base+"outputs.parameters"], vars[base+"outputs.result"] = string(b), string(r)
		return
	}
	o := n.Outputs
	if o == nil {
		return
	}
	for _, p := range o.Parameters {
		if p.Value != nil {
			vars[base+"outputs.parameters."+p.Name] = *p.Value
		}
	}
	for _, a := range o.Artifacts {
		vars[base+"outputs.artifacts."+a.Name] = n.ID + "/" + a.Name
	}
	if o.Result != nil {
		vars[base+"outputs.result"] = *o.Result
	}
	if o.ExitCode != nil {
		vars[base+"exitCode"] = strconv.Itoa(*o.ExitCode)
	}
}
