package scheduler

import (
	"fmt"
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
)

// AppKey identifies the application (or process, deployment, daemonset) that task groups
// belong to; UNIQUE, MAXPER and GROUPBY count within one AppKey.
type AppKey struct {
	Kind      v4.Kind
	Namespace string
	Name      string
}

func (k AppKey) String() string { return string(k.Kind) + " " + k.Namespace + "/" + k.Name }

// Request asks for instances of one application to be placed.
type Request struct {
	App        AppKey
	Labels     map[string]string // the task groups' labels (EXCLUDE matches them)
	Constraint *v4.Constraint
	// Indexes are the instance indexes to place.
	Indexes []int
	// Resources one task group needs, before executor overhead.
	Resources v4.NodeResources
	// FixedPorts are host ports every task group holds (by port name); RandomPorts are
	// names of ports that get a free port from the node's ranges.
	FixedPorts  []v4.AllocatedPort
	RandomPorts []v4.AllocatedPort
	// GPUs are the tasks' GPU requests (also summed in Resources.Extended, which nodes
	// without a GPU inventory count).
	GPUs []TaskGPURequest
	// Strategy overrides Options.Strategy when set.
	Strategy string
	// Node, when set, is the only node considered: a dependency pod must run on the node
	// of its dependents, a move may name its target. Every other check still applies.
	Node string
	// TakenPorts are host ports, by node name, that the request must not get although
	// the node does not report them busy (yet): the ports a run of the same instance
	// found taken at its start. A random port skips them; a fixed one among them makes
	// the node infeasible.
	TakenPorts map[string][]int
	// AvoidNode is a node the request must not use: a move off a node. Both are node
	// names, not hostnames, which machines may share.
	AvoidNode string
	// Runtime is the container runtime the pod asks for (spec.runtime): only nodes that
	// offer it (v4.AttrContainerRuntimes) take the request. Empty: any node.
	Runtime string
	// Volumes are the pod's csi volumes (docs/volumes.md, "Scheduling"): only nodes that
	// can use every volume they claim take the request. Empty: any node.
	Volumes []v4.PodVolume
	// Priority is the owner's resolved priority: placements record it, and Preempt
	// evicts only task groups of lower priority. NoPreempt is preemptionPolicy Never.
	Priority  int32
	NoPreempt bool
	// Revocable asks for the revocable tier (docs/policy.md, "Revocable capacity"):
	// placed on free or lent cpu and memory, never preempting anything.
	Revocable bool
}

// RequestFor builds the request that places the given instance indexes of an
// application, process, deployment (with a template), daemonset or dependency.
func RequestFor(obj v4.Object, indexes []int) (*Request, error) {
	meta := obj.GetMeta()
	req := &Request{
		App:      AppKey{Kind: obj.GetKind(), Namespace: meta.Namespace, Name: meta.Name},
		Indexes:  indexes,
		Strategy: meta.Annotations[StrategyAnnotation],
	}
	var tmpl *v4.PodTemplate
	switch o := obj.(type) {
	case *v4.Application:
		tmpl, req.Constraint = &o.Spec.Template, o.Constraint
		req.setScheduling(&o.Spec.Scheduling)
	case *v4.Process:
		tmpl, req.Constraint = &o.Spec.Template, o.Constraint
		req.setScheduling(&o.Spec.Scheduling)
	case *v4.Deployment:
		if o.Spec.Template == nil {
			return nil, fmt.Errorf("deployment %s/%s has no template to place", meta.Namespace, meta.Name)
		}
		tmpl, req.Constraint = o.Spec.Template, o.Constraint
	case *v4.Daemonset:
		tmpl, req.Constraint = &o.Spec.Template, oneper(o.Constraint)
		req.setScheduling(&o.Spec.Scheduling)
		req.NoPreempt = true // a daemon's priority orders and is recorded; it stops nothing
	case *v4.Job:
		tmpl, req.Constraint = &o.Spec.Template, o.Constraint
		req.setScheduling(&o.Spec.Scheduling)
	case *v4.Dependency: // the dependency controller pins each pod to its node
		tmpl, req.Constraint = &o.Spec.Template, o.Constraint
	default:
		return nil, fmt.Errorf("%s objects are not placed", obj.GetKind())
	}
	return req.forTemplate(meta, tmpl)
}

// RequestForTemplate builds the request that places the given indexes of a pod template
// that belongs to app (a workflow's step: its template is the step's, not the object's),
// with the owner's resolved priority, preemption policy and tier (sched): a step
// preempts as a job's run does (docs/policy.md, "Naming a class").
func RequestForTemplate(app AppKey, meta *v4.ObjectMeta, sched *v4.Scheduling, tmpl *v4.PodTemplate, c *v4.Constraint, indexes []int) (*Request, error) {
	req := &Request{App: app, Indexes: indexes, Strategy: meta.Annotations[StrategyAnnotation], Constraint: c}
	req.setScheduling(sched)
	return req.forTemplate(meta, tmpl)
}

func (req *Request) forTemplate(meta *v4.ObjectMeta, tmpl *v4.PodTemplate) (*Request, error) {
	if req.Strategy != "" && req.Strategy != Spread && req.Strategy != Binpack {
		return nil, fmt.Errorf("annotation %s: %q is neither %q nor %q", StrategyAnnotation, req.Strategy, Spread, Binpack)
	}
	req.Labels = v4.InstanceLabels(meta, tmpl)
	req.Runtime = tmpl.Spec.Runtime
	for _, v := range tmpl.Spec.Volumes {
		if v.CSI != nil {
			req.Volumes = append(req.Volumes, v)
		}
	}
	if err := req.addTasks(&tmpl.Spec); err != nil {
		return nil, fmt.Errorf("%s: %w", req.App, err)
	}
	return req, nil
}

// oneper adds "hostname UNIQUE" to a daemonset's constraint: one task group per node.
func oneper(c *v4.Constraint) *v4.Constraint {
	out := &v4.Constraint{}
	if c != nil {
		out.IntersectionItem = append(out.IntersectionItem, c.IntersectionItem...)
	}
	out.IntersectionItem = append(out.IntersectionItem, v4.ConstraintItem{UnionData: []v4.ConstraintData{{Name: hostnameAttr, Operate: v4.OpUnique}}})
	return out
}

// addTasks sums the tasks' requests and collects their host ports and GPU requests.
func (r *Request) addTasks(pod *v4.PodSpec) error {
	names := v4.TaskNames(pod)
	for i, c := range pod.Containers {
		r.addGPU(names[i], c.Resources)
		if err := r.addResources(c.Resources); err != nil {
			return err
		}
		for _, p := range c.Ports {
			r.addPort(p.Name, p.Protocol, containerHostPort(pod.NetworkMode, p))
		}
	}
	for i, t := range pod.Processes {
		r.addGPU(names[len(pod.Containers)+i], t.Resources)
		if err := r.addResources(t.Resources); err != nil {
			return err
		}
		for _, p := range t.Ports {
			r.addPort(p.Name, p.Protocol, processHostPort(p))
		}
	}
	return nil
}

// noHostPort marks a port that takes no host port.
const noHostPort = -1

// containerHostPort is the host port a container port needs (docs/agent.md, Container
// pods): in HOST mode
// the container port itself (0 random, < 0 none); in BRIDGE mode the host port (0 random,
// < 0 no mapping); other modes publish nothing on the host.
func containerHostPort(mode string, p v4.Port) int {
	switch mode {
	case "HOST":
		if p.ContainerPort < 0 {
			return noHostPort
		}
		return p.ContainerPort
	case "BRIDGE":
		if p.HostPort < 0 {
			return noHostPort
		}
		return p.HostPort
	}
	return noHostPort
}

// processHostPort is the host port a process port needs: 0 random, a fixed one as given,
// -1 none (docs/spec.md "Ports"): the port is declared but takes no host port, so it gets
// no PORT_<name> and ${ports.<name>} is refused at validation.
func processHostPort(p v4.Port) int {
	if p.HostPort < 0 {
		return noHostPort
	}
	return p.HostPort
}

func (r *Request) addGPU(task string, res *v4.Resources) {
	if g := v4.GPURequestOf(res); !g.IsZero() {
		r.GPUs = append(r.GPUs, TaskGPURequest{Task: task, GPURequest: g})
	}
}

func (r *Request) addPort(name, protocol string, hostPort int) {
	switch {
	case hostPort == noHostPort:
	case hostPort == 0:
		r.RandomPorts = append(r.RandomPorts, v4.AllocatedPort{Name: name, Protocol: protocol})
	default:
		r.FixedPorts = append(r.FixedPorts, v4.AllocatedPort{Name: name, HostPort: hostPort, Protocol: protocol})
	}
}

func (r *Request) addResources(res *v4.Resources) error {
	if res == nil || res.Requests == nil {
		return nil
	}
	for _, q := range []struct {
		v   v4.Quantity
		dst *float64
	}{{res.Requests.CPU, &r.Resources.CPU}, {res.Requests.Memory, &r.Resources.MemoryMB}, {res.Requests.Storage, &r.Resources.DiskMB}} {
		if q.v == "" {
			continue
		}
		f, err := strconv.ParseFloat(string(q.v), 64)
		if err != nil || f < 0 {
			return fmt.Errorf("resource request %q is not a non-negative number", q.v)
		}
		*q.dst += f
	}
	for _, e := range res.ExtendedResources {
		if r.Resources.Extended == nil {
			r.Resources.Extended = map[string]float64{}
		}
		r.Resources.Extended[e.Name] += e.Value
	}
	return nil
}
