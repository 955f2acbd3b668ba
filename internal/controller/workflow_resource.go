package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/workflow/engine"
)

// ResourceSteps performs a workflow's resource steps (docs/workflows.md, "Resource
// steps"). The controller may write any object; a resource step must not: it acts with
// the rights of whoever submitted the workflow, as they are when it runs, so the server
// (which knows tokens, policies and the admission chain) performs it.
type ResourceSteps interface {
	// DoResourceStep authenticates step.Submitter as it is now, admits the object as a
	// direct write of that identity would be, and writes (or deletes) it.
	DoResourceStep(ctx context.Context, step ResourceStep) (ResourceResult, error)
}

// ResourceStep is one resource step to perform: Object was parsed from the manifest
// after substitution and checked against what admission judged.
type ResourceStep struct {
	// Workflow is "namespace/name", for messages and events.
	Workflow  string
	Submitter string // the workflow's v4.WfSubmitterAnnotation
	Action    string
	Object    v4.Object
	Manifest  []byte
	// Key names the step for good: the workflow's UID and the node's ID. A create marks
	// its object with it (v4.WfCreatedByStepAnnotation).
	Key string
}

// ResourceResult is what a resource step wrote.
type ResourceResult struct {
	Name, ResourceVersion string
}

// ErrResourceStepsNotReady is what ResourceSteps answers before it can perform steps
// (the server is not serving yet): the step is started again in a later pass.
var ErrResourceStepsNotReady = errors.New("resource steps: the server is not serving yet")

// errNoResourceSteps fails resource steps of a controller built without ResourceSteps.
var errNoResourceSteps = errors.New("resource steps are not available in this controller")

// resources performs the resource steps the engine starts, one after another in the
// pass, and records each one's outcome in its node: no task group, no agent. A pass that
// dies after a write and before its status is written performs the step again in the
// next one: apply and delete come to the same end, and a second create finds the object
// its first one marked with the step's key (docs/workflows.md).
func (p *wfPass) resources(ctx context.Context, starts []engine.Start) {
	for _, st := range starts {
		n := p.nodes[st.NodeID]
		res, err := p.resource(ctx, st)
		if errors.Is(err, ErrResourceStepsNotReady) {
			p.unstart([]string{st.NodeID})
			p.wake(wfPendingRetry)
			continue
		}
		n.FinishedAt = p.now
		if err != nil {
			n.Phase, n.Message = v4.WfFailed, err.Error()
			p.set(n)
			continue
		}
		name, rv := res.Name, res.ResourceVersion
		n.Phase, n.Message = v4.WfSucceeded, fmt.Sprintf("%s %s", st.Template.Resource.Action, name)
		n.Outputs = &v4.WfOutputs{Parameters: []v4.WfParameter{
			{Name: v4.WfResourceOutName, Value: &name}, {Name: v4.WfResourceOutVersion, Value: &rv}}}
		p.set(n)
	}
	if len(starts) > 0 {
		p.wake(time.Millisecond) // the steps after them
	}
}

// resource re-parses the substituted manifest, checks it is the object admission judged
// (kind, name and namespace: a parameter cannot turn it into another one) and has the
// server perform it as the submitter.
func (p *wfPass) resource(ctx context.Context, st engine.Start) (ResourceResult, error) {
	ns := p.wf.Metadata.Namespace
	r := st.Template.Resource
	if st.Admitted == nil || st.Admitted.Resource == nil {
		return ResourceResult{}, errors.New("the resource template as admitted is missing")
	}
	want, err := v4.ParseWfResourceTemplate(st.Admitted.Resource.Manifest, ns)
	if err != nil {
		return ResourceResult{}, fmt.Errorf("resource manifest: %w", err)
	}
	got, err := v4.ParseWfResource(r.Manifest, ns)
	if err != nil {
		return ResourceResult{}, fmt.Errorf("resource manifest after substitution: %w", err)
	}
	if g, w := objectName(got), objectName(want); g != w {
		return ResourceResult{}, fmt.Errorf("resource manifest after substitution names %s, not %s as admitted", g, w)
	}
	if got.GetMeta().Namespace != ns {
		return ResourceResult{}, fmt.Errorf("resource manifest names namespace %s: a resource step writes in its workflow's namespace %s only",
			got.GetMeta().Namespace, ns)
	}
	if p.c.opts.ResourceSteps == nil {
		return ResourceResult{}, errNoResourceSteps
	}
	return p.c.opts.ResourceSteps.DoResourceStep(ctx, ResourceStep{Workflow: ns + "/" + p.wf.Metadata.Name,
		Submitter: p.wf.Metadata.Annotations[v4.WfSubmitterAnnotation], Action: r.Action, Object: got, Manifest: []byte(r.Manifest),
		Key: p.wf.Status.UID + "/" + st.NodeID})
}

func objectName(o v4.Object) string {
	m := o.GetMeta()
	return fmt.Sprintf("%s %s/%s", o.GetKind(), m.Namespace, m.Name)
}
