package executor

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/executor/health"
	"github.com/berthhq/berth/internal/instvol"
)

// podPlan is what the executor derives from a task group without side effects: the
// tasks, their drivers, rendered process specs, ports and checks. Adopt needs exactly
// this (not the env or files, which only matter to a start).
type podPlan struct {
	ns, name string
	dir      string
	// instance is the workload's instance the pod runs: its instance volumes' owner.
	instance instvol.Key
	tasks    []taskPlan
	// hostNetwork: processes, or containers in HOST mode (checks probe 127.0.0.1).
	hostNetwork bool
	// net is the network of a container pod (nil for processes).
	net   *netPlan
	grace time.Duration
	// hostPorts are the host ports the scheduler gave the task group (checked before a
	// start).
	hostPorts []v4.AllocatedPort
	// roleChecks: a task has a check with a role, so the pod reports readiness apart
	// from health (docs/pods.md, "Probes").
	roleChecks bool
	// order is the order the tasks start in (indexes into tasks): sidecars, then init
	// tasks, then the main tasks, each in the spec's order (docs/pods.md).
	order []int
	// holder is set for a container pod of its own network (CNM) whose first task to
	// start is an init task: a small container that holds the network, which every task
	// joins (docs/pods.md, "Network").
	holder *holderPlan
	// owner is the task that owns a CNM pod's network (networkOwner), -1 when none does.
	owner int
	// volumes are the pod's own volumes (podvolumes.go).
	volumes []v4.PodVolume
	// runtime is the runtime handler the pod's containers run with (spec.runtime),
	// empty for the node's default; the driver resolves it (driver.ContainerSetup).
	runtime string
	// revocable: the task group is of the revocable tier (spec.revocable), so its tasks
	// run with the lowest cpu weight (driver.Task.Revocable).
	revocable bool
	// jobEnv is BERTH_JOB_NAME, and BERTH_JOB_INDEX for an Indexed job's run (jobEnv).
	jobEnv []envVar
	// runToEnd is set for a job's run (docs/jobs.md) and a workflow step: its main tasks are meant to end, so
	// one that ends within a process's startGracePeriod has ended, not failed to start.
	runToEnd bool
	// step is the task group's workflow step (step.go), nil for another pod; main is the
	// index of its main task.
	step *v4.StepIO
	main int
	// err is why the pod cannot run (no driver, a variable that does not render); the
	// pod fails with it at once.
	err error
}

// taskPlan is one task of the pod.
type taskPlan struct {
	name string
	id   string
	drv  driver.Driver

	// Exactly one of process (rendered) and container is set.
	process   *v4.ProcessTask
	container *v4.Container

	ports     []v4.AllocatedPort // the host ports of the task's own ports
	resources *v4.Resources
	gpus      []v4.TaskGPU // the cards the scheduler gave the task
	// check, readiness and startup are the task's first local check of each role
	// (check: liveness, which a check without a role is), nil without one.
	check, readiness, startup *v4.HealthCheck
	labels                    map[string]string
	// lifecycle is the task's role and hooks (nil: a main task without hooks).
	lifecycle *v4.Lifecycle
	// roleChecks: one of the task's checks has a role.
	roleChecks bool
}

// setChecks picks the task's local checks by role.
func (t *taskPlan) setChecks(checks []v4.HealthCheck) {
	t.check = health.Local(checks, v4.ProbeLiveness)
	t.readiness = health.Local(checks, v4.ProbeReadiness)
	t.startup = health.Local(checks, v4.ProbeStartup)
	t.roleChecks = health.HasRoles(checks)
}

// role is the task's lifecycle role: v4.RoleInit, v4.RoleSidecar or "" (main).
func (t *taskPlan) role() string { return t.lifecycle.Role() }

func (t *taskPlan) env() []v4.EnvVar {
	if t.process != nil {
		return t.process.Env
	}
	return t.container.Env
}

func (t *taskPlan) dataRefs() ([]v4.ConfigMapRef, []v4.SecretRef) {
	if t.process != nil {
		return t.process.ConfigMaps, t.process.Secrets
	}
	return t.container.ConfigMaps, t.container.Secrets
}

func (t *taskPlan) specPorts() []v4.Port {
	if t.process != nil {
		return t.process.Ports
	}
	return t.container.Ports
}

// podSubdirs are the directories prepare creates in the pod's directory.
var podSubdirs = []string{"work", "run", "logs"}

// subdir is one of the pod's directories (work, run, logs). The driver
// gets work as the task's WorkBaseDir and runs a task without workPath there, so
// ${work_base_dir} and a default ${workPath} render to this same path.
func (p *podPlan) subdir(name string) string { return filepath.Join(p.dir, name) }

// planDriver is the driver of tg's kind of tasks, with the node's admission of tg
// recorded in p.err (the first error wins).
func (e *Executor) planDriver(tg *v4.TaskGroup, p *podPlan) driver.Driver {
	kind := driver.KindOf(&tg.Spec.Template.Spec)
	drv := e.cfg.Drivers[kind]
	if drv == nil {
		p.err = fmt.Errorf("no %s driver on this node", kind)
	}
	if e.cfg.Admit != nil && p.err == nil {
		p.err = e.cfg.Admit(tg)
	}
	return drv
}

// planPod derives the plan of tg on this node.
func (e *Executor) planPod(tg *v4.TaskGroup) *podPlan {
	ns, name := tg.Metadata.Namespace, tg.Metadata.Name
	spec := &tg.Spec.Template.Spec
	p := &podPlan{
		ns:          ns,
		name:        name,
		dir:         PodDir(e.cfg.DataDir, ns, name),
		instance:    instvol.KeyOf(tg),
		hostNetwork: len(spec.Processes) > 0,
		grace:       time.Duration(max(1, tg.Spec.KillGracePeriod)) * time.Second,
		hostPorts:   tg.Spec.Ports,
		volumes:     spec.Volumes,
		runtime:     spec.Runtime,
		revocable:   tg.Spec.Revocable,
		owner:       -1,
		jobEnv:      jobEnv(tg),
		runToEnd:    tg.Spec.Owner.Kind == v4.KindJob || tg.Spec.Step != nil,
	}
	names := v4.TaskNames(spec)
	if len(names) == 0 {
		p.err = errors.New("the pod template has no containers and no processes")
		return p
	}
	drv := e.planDriver(tg, p)
	hostPorts := map[string]v4.AllocatedPort{}
	portNumbers := map[string]int{}
	for _, ap := range tg.Spec.Ports {
		hostPorts[ap.Name] = ap
		portNumbers[ap.Name] = ap.HostPort
	}
	if len(spec.Containers) > 0 {
		bc, ok := drv.(driver.CNIBridge)
		p.net = planNetwork(tg, e.cfg.NodeName, hostPorts, ok && bc.BridgeThroughCNI())
		p.hostNetwork = p.net.hostMode()
	}
	vars := v4.Variables{
		Namespace:   ns,
		ProcessName: tg.Spec.Owner.Name,
		InstanceID:  tg.Spec.Index,
		HostIP:      e.cfg.HostIP,
		Ports:       portNumbers,
		WorkBaseDir: p.subdir("work"),
		RunBaseDir:  p.subdir("run"),
	}
	lifecycles := v4.TaskLifecycles(spec)
	for i, n := range names {
		t := taskPlan{name: n, id: TaskID(ns, name, n), drv: drv, labels: taskLabels(tg, e.cfg.NodeName, n), gpus: gpusOf(tg, n),
			lifecycle: lifecycles[i]}
		if i < len(spec.Containers) {
			c, err := containerVariables(tg, e.cfg.HostIP, spec.Containers[i], portNumbers).RenderContainer(spec.Containers[i])
			if err != nil && p.err == nil {
				p.err = fmt.Errorf("container %s: %w", n, err)
			}
			t.container = &c
			t.resources = c.Resources
			t.setChecks(c.HealthChecks)
		} else {
			proc, err := vars.RenderProcess(spec.Processes[i-len(spec.Containers)])
			if err != nil && p.err == nil {
				p.err = fmt.Errorf("process %s: %w", n, err)
			}
			t.process = &proc
			t.resources = proc.Resources
			t.setChecks(proc.HealthChecks)
		}
		for _, sp := range t.specPorts() {
			if ap, ok := hostPorts[sp.Name]; ok {
				t.ports = append(t.ports, ap)
			}
		}
		p.roleChecks = p.roleChecks || t.roleChecks
		p.tasks = append(p.tasks, t)
	}
	p.order = startOrder(p.tasks)
	p.planStep(tg)
	p.holder = e.planHolder(tg, p)
	p.owner = p.networkOwner()
	return p
}

// taskLabels are the task group's labels plus berth's, which let an agent that restarts
// find the task again (driver.List).
func taskLabels(tg *v4.TaskGroup, node, task string) map[string]string {
	l := maps.Clone(tg.Spec.Labels)
	if l == nil {
		l = map[string]string{}
	}
	l[driver.LabelTaskGroup] = podKey(tg.Metadata.Namespace, tg.Metadata.Name)
	l[driver.LabelTask] = task
	l[driver.LabelNode] = node
	if tg.Spec.OwnerVersion != "" {
		l[driver.LabelVersion] = tg.Spec.OwnerVersion
	}
	return l
}

// limits returns the task's CPU (cores) and memory (MB) limits; "-1" or empty is 0,
// unlimited.
func limits(r *v4.Resources) (cpu, mem float64, err error) {
	if r == nil || r.Limits == nil {
		return 0, 0, nil
	}
	if cpu, err = quantity(r.Limits.CPU); err != nil {
		return 0, 0, fmt.Errorf("limits.cpu: %w", err)
	}
	if mem, err = quantity(r.Limits.Memory); err != nil {
		return 0, 0, fmt.Errorf("limits.memory: %w", err)
	}
	return max(0, cpu), max(0, mem), nil
}

// quantity parses a resource string; empty is 0.
func quantity(q v4.Quantity) (float64, error) {
	if q == "" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(string(q)), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", q)
	}
	return f, nil
}

// containerVariables are the values of a container's ${bcs.*} variables in task group tg:
// a port is the host port allocated to it, else its container port.
func containerVariables(tg *v4.TaskGroup, hostIP string, c v4.Container, hostPorts map[string]int) v4.ContainerVariables {
	ports := map[string]int{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
		if hp, ok := hostPorts[p.Name]; ok && hp > 0 {
			ports[p.Name] = hp
		}
	}
	return v4.ContainerVariables{
		Namespace: tg.Metadata.Namespace, AppName: tg.Spec.Owner.Name, InstanceID: tg.Spec.Index, HostIP: hostIP,
		TaskGroupID: tg.Metadata.Name, TaskGroupName: fmt.Sprintf("%s-%d", tg.Spec.Owner.Name, tg.Spec.Index), Ports: ports,
	}
}
