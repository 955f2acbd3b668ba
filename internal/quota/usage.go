package quota

import (
	"math"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// How usage is counted (docs/policy.md, "Counting"):
//
//   - an application or process asks its instances times what one instance's tasks
//     request, whether they run or not (stopped instances included: starting them again
//     must not pass the quota);
//   - a deployment with a template counts the larger of its own spec and the applications
//     it controls, which during a rollout are the old and the new one together: the
//     surge counts, and so does the moment where the old one still runs in full;
//   - a daemonset asks one instance per node it runs on (its status), at least one;
//   - jobs, cronjobs and workflows ask nothing by themselves: their task groups count
//     while they are active (not finished), so a run, a cronjob's run or a workflow's step
//     waits for room rather than being refused.

// PerInstance is what one task group of pod asks: its tasks' requests summed, and one
// instance.
func PerInstance(pod *v4.PodSpec) List {
	l := List{Instances: 1}
	for i := range pod.Containers {
		addTask(l, pod.Containers[i].Resources)
	}
	for i := range pod.Processes {
		addTask(l, pod.Processes[i].Resources)
	}
	return l
}

func addTask(l List, r *v4.Resources) {
	if r == nil {
		return
	}
	if r.Requests != nil {
		l[CPU] += amount(r.Requests.CPU)
		l[Memory] += amount(r.Requests.Memory)
		l[Disk] += amount(r.Requests.Storage)
	}
	for _, e := range r.ExtendedResources {
		if k := extendedName(e.Name); k != "" {
			l[k] += e.Value
		}
	}
}

// extendedName is the quota's name of an extended resource, "" for one no quota bounds.
func extendedName(name string) string {
	switch name {
	case v4.ResourceGPU:
		return GPU
	case v4.ResourceVCUDACore:
		return VCUDACore
	case v4.ResourceVCUDAMemory:
		return VCUDAMemory
	}
	return ""
}

// amount reads a validated quantity as v4's validation does (spaces trimmed); "-1"
// (unlimited, processes) and what validation refuses (no number, NaN) ask nothing.
func amount(q v4.Quantity) float64 {
	f, err := strconv.ParseFloat(strings.TrimSpace(string(q)), 64)
	if err != nil || !(f >= 0) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

// Usage is what objs, the objects of one namespace, ask together (see above). Objects of
// kinds that ask nothing are skipped, so the caller may pass any.
func Usage(objs []v4.Object) List {
	total := List{}
	deployments := map[string]List{} // a deployment's own spec, by name
	controlled := map[string]List{}  // the applications a deployment controls, summed
	for _, obj := range objs {
		switch o := obj.(type) {
		case *v4.Application, *v4.Process:
			w := workloadOf(o)
			asks := PerInstance(&w.Spec.Template.Spec).Scaled(float64(w.Spec.Instance))
			if owner, ok := deploymentOwner(w.Metadata.Annotations); ok {
				if controlled[owner] == nil {
					controlled[owner] = List{}
				}
				controlled[owner].Add(asks)
				continue
			}
			total.Add(asks)
		case *v4.Deployment:
			if o.Spec.Template != nil {
				deployments[o.Metadata.Name] = PerInstance(&o.Spec.Template.Spec).Scaled(float64(o.Spec.Instance))
			}
		case *v4.Daemonset:
			total.Add(PerInstance(&o.Spec.Template.Spec).Scaled(float64(max(o.Status.Desired, 1))))
		case *v4.TaskGroup:
			total.Add(TaskGroup(o))
		}
	}
	for name, own := range deployments {
		total.Add(Max(own, controlled[name]))
		delete(controlled, name)
	}
	for _, apps := range controlled { // their deployment is gone or not yet listed
		total.Add(apps)
	}
	return total
}

func workloadOf(obj v4.Object) *v4.Workload {
	switch o := obj.(type) {
	case *v4.Application:
		return &o.Workload
	case *v4.Process:
		return &o.Workload
	}
	return nil
}

// deploymentOwner is the deployment that controls an application, from its annotation.
func deploymentOwner(ann map[string]string) (string, bool) {
	kind, name, ok := strings.Cut(ann[v4.ControlledByAnnotation], "/")
	return name, ok && v4.Kind(kind) == v4.KindDeployment
}

// TaskGroup is what a task group counts: for one of a job or a workflow while it is
// active, one instance and what it was placed with (less the executor's overhead, which
// no spec asked); nothing for any other, since its workload's spec counts it.
func TaskGroup(tg *v4.TaskGroup) List {
	switch tg.Spec.Owner.Kind {
	case v4.KindJob, v4.KindWorkflow:
	default:
		return nil
	}
	if v4.Terminal(tg.Status.Phase) {
		return nil
	}
	r, o := tg.Spec.Resources, tg.Spec.Overhead
	l := List{Instances: 1, CPU: max(r.CPU-o.CPU, 0), Memory: max(r.MemoryMB-o.MemoryMB, 0), Disk: max(r.DiskMB-o.DiskMB, 0)}
	for name, v := range r.Extended {
		if k := extendedName(name); k != "" {
			l[k] += v
		}
	}
	return l
}

// Delta is what a write asks beyond what the namespace used: usage with the write
// (after) less usage without it (before), resource by resource.
func Delta(before, after List) List {
	out := List{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	for k, v := range before {
		if _, ok := after[k]; !ok && v != 0 {
			out[k] = -v
		}
	}
	return out
}

// Runs are the task groups obj starts one at a time, when it is a job, a cronjob or a
// workflow kind: a job's run, or each container, process or script template of a
// workflow (one step). Each must fit the quota on its own, or it could never start.
func Runs(obj v4.Object) []List {
	switch o := obj.(type) {
	case *v4.Job:
		return []List{PerInstance(&o.Spec.Template.Spec)}
	case *v4.CronJob:
		return []List{PerInstance(&o.Spec.JobTemplate.Spec.Template.Spec)}
	case *v4.Workflow, *v4.CronWorkflow, *v4.WorkflowTemplate:
		var out []List
		for _, t := range Tasks(obj) {
			l := List{Instances: 1}
			addTask(l, *t.Resources)
			out = append(out, l)
		}
		return out
	}
	return nil
}
