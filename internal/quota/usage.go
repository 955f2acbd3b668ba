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
//     waits for room rather than being refused;
//   - a dependency (deployd's depends) asks nothing by itself: its pods, one per node
//     that needs them, are task groups the dependency controller starts, and count while
//     they are active.

// PerInstance is what one task group of pod asks: its tasks' requests summed, and one
// instance.
func PerInstance(pod *v4.PodSpec) List { return perInstance(pod).list() }

// vec is a List as an array in Names' order: counting a namespace of thousands of
// objects adds arrays, not maps.
type vec [7]float64

const (
	iCPU = iota
	iMemory
	iDisk
	iGPU
	iVCUDACore
	iVCUDAMemory
	iInstances
)

func (v *vec) add(o vec) {
	for i := range v {
		v[i] += o[i]
	}
}

func (v vec) scaled(n float64) vec {
	for i := range v {
		v[i] *= n
	}
	return v
}

func maxVec(a, b vec) vec {
	for i := range a {
		a[i] = max(a[i], b[i])
	}
	return a
}

// list is v as a List naming every resource.
func (v vec) list() List {
	l := make(List, len(Names))
	for i, k := range Names {
		l[k] = v[i]
	}
	return l
}

func perInstance(pod *v4.PodSpec) vec {
	v := vec{iInstances: 1}
	for i := range pod.Containers {
		addTask(&v, pod.Containers[i].Resources)
	}
	for i := range pod.Processes {
		addTask(&v, pod.Processes[i].Resources)
	}
	return v
}

func addTask(v *vec, r *v4.Resources) {
	if r == nil {
		return
	}
	if r.Requests != nil {
		v[iCPU] += amount(r.Requests.CPU)
		v[iMemory] += amount(r.Requests.Memory)
		v[iDisk] += amount(r.Requests.Storage)
	}
	for _, e := range r.ExtendedResources {
		if i := extendedIndex(e.Name); i >= 0 {
			v[i] += e.Value
		}
	}
}

// extendedIndex is the place in vec of an extended resource, -1 for one no quota bounds.
func extendedIndex(name string) int {
	switch name {
	case v4.ResourceGPU:
		return iGPU
	case v4.ResourceVCUDACore:
		return iVCUDACore
	case v4.ResourceVCUDAMemory:
		return iVCUDAMemory
	}
	return -1
}

// extendedName is the quota's name of an extended resource, "" for one no quota bounds.
func extendedName(name string) string {
	if i := extendedIndex(name); i >= 0 {
		return Names[i]
	}
	return ""
}

// amount reads a validated quantity as v4's validation does (spaces trimmed); "-1"
// (unlimited, processes) and what validation refuses (no number, NaN) ask nothing.
func amount(q v4.Quantity) float64 {
	if q == "" {
		return 0
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(string(q)), 64)
	if err != nil || !(f >= 0) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

// Usage is what objs, the objects of one namespace, ask together (see above). Objects of
// kinds that ask nothing are skipped, so the caller may pass any.
func Usage(objs []v4.Object) List {
	var total vec
	var deployments, controlled map[string]vec // a deployment's own spec; the applications it controls
	for _, obj := range objs {
		switch o := obj.(type) {
		case *v4.Application, *v4.Process:
			w := workloadOf(o)
			if w.Spec.Revocable() { // it runs on lent capacity: the lender's quota is not charged
				continue
			}
			asks := perInstance(&w.Spec.Template.Spec).scaled(float64(w.Spec.Instance))
			if owner, ok := deploymentOwner(w.Metadata.Annotations); ok {
				if controlled == nil {
					controlled = map[string]vec{}
				}
				c := controlled[owner]
				c.add(asks)
				controlled[owner] = c
				continue
			}
			total.add(asks)
		case *v4.Deployment:
			if o.Spec.Template != nil && !o.Spec.Revocable() {
				if deployments == nil {
					deployments = map[string]vec{}
				}
				deployments[o.Metadata.Name] = perInstance(&o.Spec.Template.Spec).scaled(float64(o.Spec.Instance))
			}
		case *v4.Daemonset:
			total.add(perInstance(&o.Spec.Template.Spec).scaled(float64(max(o.Status.Desired, 1))))
		case *v4.TaskGroup:
			if !o.Spec.Revocable {
				total.add(taskGroup(o))
			}
		}
	}
	for name, own := range deployments {
		total.add(maxVec(own, controlled[name]))
		delete(controlled, name)
	}
	for _, apps := range controlled { // their deployment is gone or not yet listed
		total.add(apps)
	}
	return total.list()
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
	c := ann[v4.ControlledByAnnotation]
	if c == "" {
		return "", false
	}
	kind, name, ok := strings.Cut(c, "/")
	return name, ok && v4.Kind(kind) == v4.KindDeployment
}

// TaskGroup is what a task group counts: for one of a job, a workflow or a dependency
// while it is active, one instance and what it was placed with (less the executor's
// overhead, which no spec asked); nothing for any other, since its workload's spec
// counts it.
func TaskGroup(tg *v4.TaskGroup) List { return taskGroup(tg).list() }

func taskGroup(tg *v4.TaskGroup) vec {
	if !TaskGroupCounts(tg) || v4.Terminal(tg.Status.Phase) {
		return vec{}
	}
	r, o := tg.Spec.Resources, tg.Spec.Overhead
	v := vec{iCPU: max(r.CPU-o.CPU, 0), iMemory: max(r.MemoryMB-o.MemoryMB, 0), iDisk: max(r.DiskMB-o.DiskMB, 0), iInstances: 1}
	for name, x := range r.Extended {
		if i := extendedIndex(name); i >= 0 {
			v[i] += x
		}
	}
	return v
}

// TaskGroupCounts says whether tg can ever count: its owner is a job, a workflow or a
// dependency. An owner never changes, so a task group that does not count never will.
func TaskGroupCounts(tg *v4.TaskGroup) bool {
	switch tg.Spec.Owner.Kind {
	case v4.KindJob, v4.KindWorkflow, v4.KindDependency:
		return true
	}
	return false
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
			v := vec{iInstances: 1}
			addTask(&v, *t.Resources)
			out = append(out, v.list())
		}
		return out
	}
	return nil
}
