package engine

import (
	"fmt"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/api/v4/expr"
)

// steps runs a steps template: each group once the one before it has finished, the
// steps of a group together. A failed step fails the template unless its continueOn
// allows it.
func (e *engine) steps(n v4.WfNodeStatus, c call, sc *scope) v4.WfNodeStatus {
	n.Phase = v4.WfRunning
	e.put(n)
	lim := e.limiterFor(n, c)
	for gi, group := range c.tmpl.Steps {
		g := e.newNode(fmt.Sprintf("%s[%d]", n.Name, gi), 0, v4.WfNodeStepGroup, "", n.ID)
		if !v4.WfPhaseFinished(g.Phase) {
			g.Phase = v4.WfRunning
		}
		e.put(g)
		e.addChild(n.ID, g.ID)
		done, failed, vars := true, "", map[string]string{}
		for si := range group {
			s := &group[si]
			child := e.callStep(stepCall{path: g.Name + "." + s.Name, step: s, scope: sc, boundary: n.ID, depth: c.depth + 1, limit: lim, lib: c.lib})
			e.link(g.ID, child)
			switch {
			case !v4.WfPhaseFinished(child.Phase):
				done = false
			case failedPhase(child.Phase) && !continues(s, child.Phase) && failed == "":
				failed = fmt.Sprintf("step %q %s: %s", s.Name, child.Phase, child.Message)
			}
			childVars(vars, "steps", s.Name, child, e.nodes)
		}
		if !done {
			return e.nodes[n.ID]
		}
		g = e.nodes[g.ID]
		if !v4.WfPhaseFinished(g.Phase) {
			g.Phase, g.FinishedAt = phaseIf(failed == ""), e.in.Now
			e.put(g)
		}
		sc = sc.withMap(vars)
		if failed != "" {
			return e.end(e.nodes[n.ID], v4.WfFailed, failed)
		}
	}
	return e.endWithOutputs(e.nodes[n.ID], c.tmpl, sc)
}

// link records child under parent when the child was recorded.
func (e *engine) link(parentID string, child v4.WfNodeStatus) {
	if _, ok := e.nodes[child.ID]; ok {
		e.addChild(parentID, child.ID)
	}
}

func failedPhase(p string) bool { return p == v4.WfFailed || p == v4.WfError }

func continues(s *v4.WfStep, phase string) bool {
	c := s.ContinueOn
	return c != nil && (phase == v4.WfFailed && c.Failed || phase == v4.WfError && c.Error)
}

func phaseIf(ok bool) string {
	if ok {
		return v4.WfSucceeded
	}
	return v4.WfFailed
}

// end finishes a node with a phase and message.
func (e *engine) end(n v4.WfNodeStatus, phase, msg string) v4.WfNodeStatus {
	n.Phase, n.Message, n.FinishedAt = phase, msg, e.in.Now
	e.put(n)
	return n
}

// endWithOutputs finishes a steps or dag node with its outputs, taken from its children.
func (e *engine) endWithOutputs(n v4.WfNodeStatus, t *v4.WfTemplate, sc *scope) v4.WfNodeStatus {
	if t.Outputs != nil {
		out := &v4.WfOutputs{Artifacts: t.Outputs.Artifacts}
		for _, p := range t.Outputs.Parameters {
			v, err := outputValue(p.ValueFrom, sc)
			if err != nil {
				return e.end(n, v4.WfError, fmt.Sprintf("output parameter %q: %v", p.Name, err))
			}
			out.Parameters = append(out.Parameters, v4.WfParameter{Name: p.Name, Value: &v})
		}
		n.Outputs = out
	}
	return e.end(n, v4.WfSucceeded, "")
}

func outputValue(vf *v4.WfValueFrom, sc *scope) (string, error) {
	switch {
	case vf == nil:
		return "", fmt.Errorf("no valueFrom")
	case vf.Parameter != "":
		v, err := sc.substitute(vf.Parameter)
		if err != nil && vf.Default != nil {
			return *vf.Default, nil
		}
		return v, err
	case vf.Expression != "":
		ok, err := expr.EvalWhen(vf.Expression, sc.lookup)
		return fmt.Sprint(ok), err
	case vf.Default != nil:
		return *vf.Default, nil
	}
	return "", fmt.Errorf("a steps or dag template's output comes from a parameter or an expression")
}
