package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// admitWorkflowRefs checks what api/v4 cannot: the workflowtemplates that a workflow's
// (or a workflowtemplate's) templateRefs name exist in its namespace, stored or written
// in the same stream, hold the template named, and get the input parameters it has no
// default for (docs/workflows.md, "Admission").
func admitWorkflowRefs(ctx context.Context, a *admission, t target) error {
	var spec *v4.WorkflowSpec
	switch o := t.obj.(type) {
	case *v4.Workflow:
		spec = &o.Spec
	case *v4.WorkflowTemplate:
		spec = &o.Spec
	case *v4.CronWorkflow:
		spec = &o.Spec.WorkflowSpec
	default:
		return nil
	}
	return a.s.checkWorkflowRefs(ctx, t.obj, spec, a.docs)
}

func (s *Server) checkWorkflowRefs(ctx context.Context, obj v4.Object, spec *v4.WorkflowSpec, stream []v4.Document) error {
	ns := obj.GetMeta().Namespace
	libs := map[string]*v4.WorkflowTemplate{} // read once per request object; nil: none
	libOf := func(name string) (*v4.WorkflowTemplate, error) {
		if wt, ok := libs[name]; ok {
			return wt, nil
		}
		o := streamObject(stream, v4.KindWorkflowTemplate, ns, name)
		if o == nil {
			got, err := s.store.Get(ctx, v4.KindWorkflowTemplate, ns, name)
			switch {
			case errors.Is(err, store.ErrNotFound):
			case err != nil:
				return nil, fmt.Errorf("read workflowtemplate %s/%s: %w", ns, name, err)
			default:
				o = got
			}
		}
		wt, _ := o.(*v4.WorkflowTemplate)
		libs[name] = wt
		return wt, nil
	}
	var problems v4.FieldErrors
	for path, step := range workflowCalls(spec) {
		ref := step.TemplateRef
		if ref == nil {
			continue
		}
		wt, err := libOf(ref.Name)
		if err != nil {
			return err
		}
		if _, cron := obj.(*v4.CronWorkflow); cron {
			path = "spec.workflowSpec." + strings.TrimPrefix(path, "spec.")
		}
		problems = append(problems, refProblems(path, ns, step, wt)...)
	}
	return httpapi.InvalidObject(obj, problems)
}

// refProblems lists what is wrong with one templateRef at path.
func refProblems(path, ns string, step *v4.WfStep, wt *v4.WorkflowTemplate) v4.FieldErrors {
	ref := step.TemplateRef
	if wt == nil {
		return v4.FieldErrors{{Field: path + ".templateRef.name",
			Message: fmt.Sprintf("workflowtemplate %s/%s does not exist (create it first, or in the same apply)", ns, ref.Name)}}
	}
	i := slices.IndexFunc(wt.Spec.Templates, func(t v4.WfTemplate) bool { return t.Name == ref.Template })
	if i < 0 {
		return v4.FieldErrors{{Field: path + ".templateRef.template",
			Message: fmt.Sprintf("workflowtemplate %s/%s has no template %q", ns, ref.Name, ref.Template)}}
	}
	var out v4.FieldErrors
	if in := wt.Spec.Templates[i].Inputs; in != nil {
		for _, want := range in.Parameters {
			if want.Default != nil || want.Value != nil || givesParam(step.Arguments, want.Name) {
				continue
			}
			out = append(out, v4.FieldError{Field: path + ".arguments.parameters",
				Message: fmt.Sprintf("missing input parameter %q of template %q of workflowtemplate %s/%s", want.Name, ref.Template, ns, ref.Name)})
		}
	}
	return out
}

func givesParam(a *v4.WfArguments, name string) bool {
	return a != nil && slices.ContainsFunc(a.Parameters, func(p v4.WfParameter) bool { return p.Name == name })
}

// workflowCalls yields every step and task of a spec with its field path.
func workflowCalls(spec *v4.WorkflowSpec) func(yield func(string, *v4.WfStep) bool) {
	return func(yield func(string, *v4.WfStep) bool) {
		for ti := range spec.Templates {
			t := &spec.Templates[ti]
			for gi, group := range t.Steps {
				for si := range group {
					if !yield(fmt.Sprintf("spec.templates[%d].steps[%d][%d]", ti, gi, si), &group[si]) {
						return
					}
				}
			}
			if t.DAG == nil {
				continue
			}
			for di := range t.DAG.Tasks {
				if !yield(fmt.Sprintf("spec.templates[%d].dag.tasks[%d]", ti, di), &t.DAG.Tasks[di].WfStep) {
					return
				}
			}
		}
	}
}

// privilegeNeeds lists the privileges an object's pods ask for: a workload's one pod, or
// each running template of a workflow or workflowtemplate (a container, a process, a
// script: on the node when it has no image), with the template's field paths.
func privilegeNeeds(obj v4.Object) []acl.Need {
	var spec *v4.WorkflowSpec
	prefix := "spec.templates"
	switch o := obj.(type) {
	case *v4.Workflow:
		spec = &o.Spec
	case *v4.WorkflowTemplate:
		spec = &o.Spec
	case *v4.CronWorkflow:
		spec, prefix = &o.Spec.WorkflowSpec, "spec.workflowSpec.templates"
	case *v4.CronJob:
		return acl.Needs("spec.jobTemplate.spec.template.spec", v4.PodSpecOf(obj))
	default:
		return acl.Needs("spec.template.spec", v4.PodSpecOf(obj))
	}
	var out []acl.Need
	for i := range spec.Templates {
		t := &spec.Templates[i]
		base := fmt.Sprintf("%s[%d]", prefix, i)
		pod := &v4.PodSpec{NetworkMode: "BRIDGE"}
		switch {
		case t.Container != nil:
			pod.Containers = []v4.Container{*t.Container}
		case t.Process != nil:
			pod.NetworkMode, pod.Processes = "HOST", []v4.ProcessTask{*t.Process}
		case t.Script != nil && t.Script.Image == "":
			pod.NetworkMode, pod.Processes = "HOST", []v4.ProcessTask{{ProcName: "script", StartCmd: "script", Env: t.Script.Env}}
		default:
			continue
		}
		for _, need := range acl.Needs(base, pod) {
			need.Field = strings.Replace(need.Field, base+".containers[0]", base+".container", 1)
			need.Field = strings.Replace(need.Field, base+".processes[0]", base+".process", 1)
			out = append(out, need)
		}
	}
	return out
}
