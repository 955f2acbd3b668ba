package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
)

// Resource steps (docs/workflows.md, "Resource steps") write objects with the rights of
// whoever submitted the workflow. Admission records that identity on the workflow and
// judges each resource template's object as a direct write of it would be; the
// controller has the server perform the step later with the identity's rights of then
// (workflow_resource.go).

// admitSubmitter records the request's identity on a workflow or a cronworkflow
// (v4.WfSubmitterAnnotation), replacing whatever the body says there: the submitter is
// who wrote the object last, never who the object claims.
func admitSubmitter(_ context.Context, a *admission, t target) error {
	var m *v4.ObjectMeta
	switch o := t.obj.(type) {
	case *v4.Workflow:
		m = &o.Metadata
	case *v4.CronWorkflow:
		m = &o.Metadata
	default:
		return nil
	}
	id := identityOf(a.r)
	sub := v4.WfSubmitterAnonymous
	if !id.Anonymous() {
		sub = id.TokenID
	}
	m.Annotations = maps.Clone(m.Annotations) // the object may share its map with a stored one
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[v4.WfSubmitterAnnotation] = sub
	return nil
}

// resourceAuthorizeSteps are what a resource template's object passes at admission: the
// steps that read nothing stored (the object's configmaps and the like may come with
// the workflow's own steps; the step runs the whole chain).
var resourceAuthorizeSteps = []admitStep{admitRight, admitPrivileges, admitReach}

// admitResourceSteps judges the object of each resource template of a workflow,
// workflowtemplate or cronworkflow as a write of it by the requester: its namespace is
// the workflow's, the requester may write its kind there (delete it, for a delete), and
// holds the privileges its pods ask for.
func admitResourceSteps(ctx context.Context, a *admission, t target) error {
	spec, prefix := workflowSpecOf(t.obj)
	if spec == nil {
		return nil
	}
	for i := range spec.Templates {
		r := spec.Templates[i].Resource
		if r == nil {
			continue
		}
		field := fmt.Sprintf("%s[%d].resource.manifest", prefix, i)
		obj, err := v4.ParseWfResourceTemplate(r.Manifest, t.ns)
		if err != nil {
			return httpapi.InvalidObject(t.obj, v4.FieldErrors{{Field: field, Message: err.Error()}})
		}
		if ns := obj.GetMeta().Namespace; ns != t.ns {
			return httpapi.Errorf(http.StatusForbidden, "%s: names namespace %s: a resource step writes in its workflow's namespace %s only", field, ns, t.ns).
				WithDetail(field, "another namespace")
		}
		rt := targetOf(obj)
		if r.Action == v4.WfResourceDelete {
			rt.obj = nil
		}
		if err := a.run(ctx, rt, resourceAuthorizeSteps); err != nil {
			return onField(field, err)
		}
	}
	return nil
}

// workflowSpecOf is the workflow spec of a workflow, workflowtemplate or cronworkflow,
// with the field path of its templates; nil for other kinds.
func workflowSpecOf(obj v4.Object) (*v4.WorkflowSpec, string) {
	switch o := obj.(type) {
	case *v4.Workflow:
		return &o.Spec, "spec.templates"
	case *v4.WorkflowTemplate:
		return &o.Spec, "spec.templates"
	case *v4.CronWorkflow:
		return &o.Spec.WorkflowSpec, "spec.workflowSpec.templates"
	}
	return nil, ""
}

// onField puts field before the message of err, keeping its status.
func onField(field string, err error) error {
	var he *httpapi.Error
	if errors.As(err, &he) {
		e := *he
		e.Message = field + ": " + he.Message
		return &e
	}
	return fmt.Errorf("%s: %w", field, err)
}
