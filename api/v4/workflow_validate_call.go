package v4

import (
	"fmt"
	"slices"
	"strings"
)

// call checks a step's or task's call of a template: the template exists, the arguments
// give its inputs, and the call's loop, condition and references.
func (g *wfGraph) call(p string, c *WfStep, sc *refScope) {
	errs := g.errs
	switch {
	case c.Template != "" && c.TemplateRef != nil:
		errs.add(p, "must set template or templateRef, not both")
	case c.TemplateRef != nil:
		checkName(p+".templateRef.name", c.TemplateRef.Name, errs)
		checkWfName(p+".templateRef.template", c.TemplateRef.Template, errs)
	case c.Template == "":
		errs.add(p+".template", "required: the template to run")
	case g.byName[c.Template] == nil:
		errs.add(p+".template", "unknown template %q", truncate(c.Template, 80))
	}
	if c.OnExit != "" && g.byName[c.OnExit] == nil {
		errs.add(p+".onExit", "unknown template %q", truncate(c.OnExit, 80))
	}
	loop := len(c.WithItems) > 0 || c.WithParam != "" || c.WithSequence != nil
	sc = sc.with(loop, sc.sees)
	checkLoop(p, c, sc, errs)
	if c.When != "" {
		checkWfWhen(p+".when", c.When, errs)
		sc.check(p+".when", c.When)
	}
	g.arguments(p+".arguments", c, sc)
}

// arguments checks a call's arguments against the called template's inputs.
func (g *wfGraph) arguments(p string, c *WfStep, sc *refScope) {
	var params []WfParameter
	var arts []WfArtifact
	if a := c.Arguments; a != nil {
		params, arts = a.Parameters, a.Artifacts
		validateWfParams(p+".parameters", params, g.errs)
		validateWfArtifacts(p+".artifacts", arts, false, g.errs)
	}
	for i, prm := range params {
		vp := fmt.Sprintf("%s.parameters[%d].value", p, i)
		if prm.Value == nil {
			g.errs.add(vp, "required: an argument gives a value")
			continue
		}
		sc.check(vp, *prm.Value)
	}
	for i, a := range arts {
		if a.From != "" {
			sc.check(fmt.Sprintf("%s.artifacts[%d].from", p, i), a.From)
		}
	}
	called := g.called(c)
	if called == nil {
		return
	}
	var in WfInputs
	if called.Inputs != nil {
		in = *called.Inputs
	}
	for _, want := range in.Parameters {
		if want.Default == nil && want.Value == nil && !slices.ContainsFunc(params, func(x WfParameter) bool { return x.Name == want.Name }) {
			g.errs.add(p+".parameters", "missing input parameter %q of template %q", want.Name, called.Name)
		}
	}
	for i, got := range params {
		if !slices.ContainsFunc(in.Parameters, func(x WfParameter) bool { return x.Name == got.Name }) {
			g.errs.add(fmt.Sprintf("%s.parameters[%d].name", p, i), "template %q has no input parameter %q", called.Name, truncate(got.Name, 80))
		}
	}
	for _, want := range in.Artifacts {
		if !want.Optional && !slices.ContainsFunc(arts, func(x WfArtifact) bool { return x.Name == want.Name }) {
			g.errs.add(p+".artifacts", "missing input artifact %q of template %q", want.Name, called.Name)
		}
	}
	for i, got := range arts {
		if !slices.ContainsFunc(in.Artifacts, func(x WfArtifact) bool { return x.Name == got.Name }) {
			g.errs.add(fmt.Sprintf("%s.artifacts[%d].name", p, i), "template %q has no input artifact %q", called.Name, truncate(got.Name, 80))
		}
	}
}

// calls lists the templates a template calls (its steps' and tasks', with their exit
// handlers), in order.
func (t *WfTemplate) calls() []*WfStep {
	var out []*WfStep
	for _, group := range t.Steps {
		for i := range group {
			out = append(out, &group[i])
		}
	}
	if t.DAG != nil {
		for i := range t.DAG.Tasks {
			out = append(out, &t.DAG.Tasks[i].WfStep)
		}
	}
	return out
}

// checkNesting refuses templates that call themselves, directly or not, and calls that
// nest deeper than MaxWfNesting steps and dag templates.
func (g *wfGraph) checkNesting() {
	names := make([]string, 0, len(g.spec.Templates))
	edges := map[string][]string{}
	index := map[string]int{}
	for i, t := range g.spec.Templates {
		names = append(names, t.Name)
		index[t.Name] = i
		for _, c := range t.calls() {
			if c.TemplateRef == nil && g.byName[c.Template] != nil {
				edges[t.Name] = append(edges[t.Name], c.Template)
			}
			if g.byName[c.OnExit] != nil {
				edges[t.Name] = append(edges[t.Name], c.OnExit)
			}
		}
	}
	if cyc := findCycle(names, edges); cyc != nil {
		g.errs.add(fmt.Sprintf("spec.templates[%d]", index[cyc[0]]), "templates call themselves: %s (recursion is not supported)", strings.Join(cyc, " → "))
		return
	}
	depth := map[string]int{}
	var walk func(string) int
	walk = func(n string) int { // no cycle, at most MaxWfTemplates deep
		if d, ok := depth[n]; ok {
			return d
		}
		d := 0
		for _, c := range edges[n] {
			d = max(d, walk(c))
		}
		if t := g.byName[n]; t != nil && (t.Steps != nil || t.DAG != nil) {
			d++
		}
		depth[n] = d
		return d
	}
	for _, n := range names {
		if d := walk(n); d > MaxWfNesting {
			g.errs.add(fmt.Sprintf("spec.templates[%d]", index[n]), "calls nest %d steps or dag templates deep, more than %d", d, MaxWfNesting)
			return
		}
	}
}
