package quota

import (
	"fmt"
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
)

// Defaults are a namespace's limit defaults (Kubernetes' LimitRange of type Container):
// what a task that gives no request or limit gets, and the most one task may ask.
// Requests and Limits name cpu, memory and disk; Max also the GPU resources.
type Defaults struct {
	Requests List `json:"defaultRequests,omitempty"`
	Limits   List `json:"defaultLimits,omitempty"`
	Max      List `json:"max,omitempty"`
}

// IsZero reports defaults that change and bound nothing.
func (d *Defaults) IsZero() bool {
	return d == nil || len(d.Requests) == 0 && len(d.Limits) == 0 && len(d.Max) == 0
}

// Validate checks defaults an administrator writes: known names, amounts in range, and
// no default above the maximum or default request above the default limit.
func (d *Defaults) Validate(field string) v4.FieldErrors {
	if d == nil {
		return nil
	}
	basic := []string{CPU, Memory, Disk}
	errs := d.Requests.Validate(field+".defaultRequests", basic)
	errs = append(errs, d.Limits.Validate(field+".defaultLimits", basic)...)
	errs = append(errs, d.Max.Validate(field+".max", taskNames)...)
	for _, k := range basic {
		if m, ok := d.Max[k]; ok {
			for _, set := range []struct {
				name string
				l    List
			}{{"defaultRequests", d.Requests}, {"defaultLimits", d.Limits}} {
				if v, ok := set.l[k]; ok && v > m {
					errs = append(errs, v4.FieldError{Field: field + "." + set.name + "." + k, Message: fmt.Sprintf("%s is above max.%s (%s)", Format(k, v), k, Format(k, m))})
				}
			}
		}
		if r, ok := d.Requests[k]; ok {
			if l, ok := d.Limits[k]; ok && r > l {
				errs = append(errs, v4.FieldError{Field: field + ".defaultRequests." + k, Message: fmt.Sprintf("%s is above defaultLimits.%s (%s)", Format(k, r), k, Format(k, l))})
			}
		}
	}
	return errs
}

// Task is one task of a spec: where it is (for errors) and its resources, which Apply
// may fill in.
type Task struct {
	Path      string // "spec.template.spec.containers[0]"
	Resources **v4.Resources
}

// Tasks lists the tasks of obj's pod templates: workloads, jobs, cronjobs, dependencies
// and the container, process and script templates of workflows.
func Tasks(obj v4.Object) []Task {
	switch o := obj.(type) {
	case *v4.Application:
		return podTasks("spec.template.spec", &o.Spec.Template.Spec)
	case *v4.Process:
		return podTasks("spec.template.spec", &o.Spec.Template.Spec)
	case *v4.Deployment:
		if o.Spec.Template != nil {
			return podTasks("spec.template.spec", &o.Spec.Template.Spec)
		}
	case *v4.Daemonset:
		return podTasks("spec.template.spec", &o.Spec.Template.Spec)
	case *v4.Dependency:
		return podTasks("spec.template.spec", &o.Spec.Template.Spec)
	case *v4.Job:
		return podTasks("spec.template.spec", &o.Spec.Template.Spec)
	case *v4.CronJob:
		return podTasks("spec.jobTemplate.spec.template.spec", &o.Spec.JobTemplate.Spec.Template.Spec)
	case *v4.Workflow:
		return workflowTasks("spec", &o.Spec)
	case *v4.WorkflowTemplate:
		return workflowTasks("spec", &o.Spec)
	case *v4.CronWorkflow:
		return workflowTasks("spec.workflowSpec", &o.Spec.WorkflowSpec)
	}
	return nil
}

func podTasks(p string, pod *v4.PodSpec) []Task {
	var out []Task
	for i := range pod.Containers {
		out = append(out, Task{Path: p + ".containers[" + strconv.Itoa(i) + "]", Resources: &pod.Containers[i].Resources})
	}
	for i := range pod.Processes {
		out = append(out, Task{Path: p + ".processes[" + strconv.Itoa(i) + "]", Resources: &pod.Processes[i].Resources})
	}
	return out
}

func workflowTasks(p string, spec *v4.WorkflowSpec) []Task {
	var out []Task
	for i := range spec.Templates {
		t := &spec.Templates[i]
		at := p + ".templates[" + strconv.Itoa(i) + "]"
		switch {
		case t.Container != nil:
			out = append(out, Task{Path: at + ".container", Resources: &t.Container.Resources})
		case t.Process != nil:
			out = append(out, Task{Path: at + ".process", Resources: &t.Process.Resources})
		case t.Script != nil:
			out = append(out, Task{Path: at + ".script", Resources: &t.Script.Resources})
		}
	}
	return out
}

// Apply gives every task of obj the default requests and limits it does not set, then
// checks each task against the maxima: the first task above one is refused with its field
// named. Call it before the quota check, so the defaults count.
func Apply(ns string, obj v4.Object, d *Defaults) error {
	if d.IsZero() {
		return nil
	}
	var errs v4.FieldErrors
	for _, t := range Tasks(obj) {
		if len(d.Requests) > 0 || len(d.Limits) > 0 {
			if *t.Resources == nil {
				*t.Resources = &v4.Resources{}
			}
			r := *t.Resources
			r.Requests = fill(r.Requests, d.Requests, clusterDefault(r))
			r.Limits = fill(r.Limits, d.Limits, false)
		}
		errs = append(errs, checkMax(ns, t, d.Max)...)
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// clusterDefault reports a task whose requests are the cluster's defaults, which
// v4.Default gives a task that wrote no resources (1 cpu, 64 MB memory, 64 MB disk, no
// limits): it counts as one that gave none, and the namespace's default requests replace
// them. (A task that wrote exactly these itself is treated the same.)
func clusterDefault(r *v4.Resources) bool {
	return r.Limits == nil && r.Requests != nil && *r.Requests == v4.ResourceList{CPU: "1", Memory: "64", Storage: "64"}
}

// fill sets the fields of rl that are empty (all of them when over: the cluster's own
// defaults, v4.Default's, which a namespace's replace) from defaults; a nil rl stays nil
// unless a default fills it.
func fill(rl *v4.ResourceList, defaults List, over bool) *v4.ResourceList {
	for _, f := range []struct {
		name string
		get  func(*v4.ResourceList) *v4.Quantity
	}{{CPU, func(r *v4.ResourceList) *v4.Quantity { return &r.CPU }},
		{Memory, func(r *v4.ResourceList) *v4.Quantity { return &r.Memory }},
		{Disk, func(r *v4.ResourceList) *v4.Quantity { return &r.Storage }}} {
		v, ok := defaults[f.name]
		if !ok || rl != nil && *f.get(rl) != "" && !over {
			continue
		}
		if rl == nil {
			rl = &v4.ResourceList{}
		}
		*f.get(rl) = v4.Quantity(strconv.FormatFloat(v, 'f', -1, 64))
	}
	return rl
}

// checkMax refuses a task whose request or limit of a resource is above max.
func checkMax(ns string, t Task, maxima List) v4.FieldErrors {
	r := *t.Resources
	if len(maxima) == 0 || r == nil {
		return nil
	}
	var errs v4.FieldErrors
	over := func(field, name string, v float64) {
		if m, ok := maxima[name]; ok && v > m+1e-9 {
			errs = append(errs, v4.FieldError{Field: t.Path + ".resources." + field,
				Message: fmt.Sprintf("%s is above namespace %s's maximum per task (%s)", Format(name, v), ns, Format(name, m))})
		}
	}
	for _, set := range []struct {
		field string
		rl    *v4.ResourceList
	}{{"requests", r.Requests}, {"limits", r.Limits}} {
		if set.rl == nil {
			continue
		}
		over(set.field+".cpu", CPU, amount(set.rl.CPU))
		over(set.field+".memory", Memory, amount(set.rl.Memory))
		over(set.field+".storage", Disk, amount(set.rl.Storage))
	}
	// Entries of one resource add up (the task asks their sum): the last one is named.
	sums, last := List{}, map[string]int{}
	for i, e := range r.ExtendedResources {
		if k := extendedName(e.Name); k != "" {
			sums[k] += e.Value
			last[k] = i
		}
	}
	for _, k := range taskNames {
		if i, ok := last[k]; ok {
			over("extendedResources["+strconv.Itoa(i)+"].value", k, sums[k])
		}
	}
	return errs
}
