package v4

import (
	"fmt"
	"slices"
)

// MaxInstances bounds spec.instance of applications, processes and deployments, so an
// instance count cannot overflow what is computed from it (task group indexes, totals);
// scale requests are held to it too. 0 is allowed: the workload stays, with its
// history and services, and runs nothing (docs/api.md, "Scale to zero").
const MaxInstances = 100000

func validateWorkload(w *Workload, kind Kind, errs *FieldErrors) {
	validatePolicies(w.RestartPolicy, w.KillPolicy, errs)
	validateConstraint("constraint", w.Constraint, errs)
	validateInstances("spec.instance", w.Spec.Instance, errs)
	validateStopped("spec.stoppedInstances", w.Spec.StoppedInstances, w.Spec.Instance, errs)
	*errs = append(*errs, ValidateScheduling(&w.Spec.Scheduling, "spec")...)
	if w.Spec.Template.Metadata != nil {
		validateLabels("spec.template.metadata.labels", w.Spec.Template.Metadata.Labels, errs)
		validateLabels("spec.template.metadata.annotations", w.Spec.Template.Metadata.Annotations, errs)
	}
	validatePod("spec.template.spec", &w.Spec.Template.Spec, kind, w.Metadata.Name, errs)
}

func validateInstances(path string, n int, errs *FieldErrors) {
	if n < 0 {
		errs.add(path, "must not be negative (0 stops every instance), got %d", n)
	} else if n > MaxInstances {
		errs.add(path, "must be at most %d, got %d", MaxInstances, n)
	}
}

// instanceKinds are the kinds whose spec.instance is required: it may be 0, so left out
// it would stop the workload without a word (the typed field cannot tell).
var instanceKinds = []Kind{KindApplication, KindProcess, KindDeployment}

// requireInstance refuses a document of an instanceKinds kind without spec.instance.
func requireInstance(kind Kind, doc any, errs *FieldErrors) {
	if !slices.Contains(instanceKinds, kind) {
		return
	}
	specs := lookupFoldAll(doc, "spec") // a spec given twice was merged, as BCS did
	instance := false
	for _, spec := range specs {
		if !isObject(spec) {
			return // a missing or wrong spec is reported by the decoder and validation
		}
		for _, n := range lookupFoldAll(spec, "instance") {
			instance = instance || n != nil
		}
	}
	if len(specs) > 0 && !instance { // absent or null
		errs.add("spec.instance", "required: the instance count (0 keeps the %s and runs nothing)", kind)
	}
}

func validatePolicies(rp *RestartPolicy, kp *KillPolicy, errs *FieldErrors) {
	if rp != nil {
		oneOf("restartPolicy.policy", rp.Policy, errs, RestartNever, RestartAlways, RestartOnFailure)
		nonNegative("restartPolicy.interval", rp.Interval, errs)
		nonNegative("restartPolicy.backoff", rp.Backoff, errs)
		nonNegative("restartPolicy.maxtimes", rp.MaxTimes, errs)
		nonNegative("restartPolicy.hostRetainTime", rp.HostRetainTime, errs)
	}
	if kp != nil {
		nonNegative("killPolicy.gracePeriod", kp.GracePeriod, errs)
	}
}

// validatePod checks a pod template. kind is KindApplication or KindProcess when the
// object's kind fixes what the pod must hold, or "" when either is allowed.
func validatePod(path string, p *PodSpec, kind Kind, objName string, errs *FieldErrors) {
	hasC, hasP := len(p.Containers) > 0, len(p.Processes) > 0
	switch {
	case hasC && hasP:
		errs.add(path, "containers and processes cannot coexist in one pod")
	case kind == KindApplication && hasP:
		errs.add(path+".processes", "an application runs containers; use kind \"process\" for processes")
	case kind == KindProcess && hasC:
		errs.add(path+".containers", "a process runs processes; use kind \"application\" for containers")
	case kind == KindProcess && !hasP:
		errs.add(path+".processes", "required: at least one process")
	case !hasC && !hasP:
		errs.add(path+".containers", "required: at least one container")
	}
	oneOf(path+".networktype", p.NetworkType, errs, "cnm", "cni")
	if p.NetworkMode == "" {
		errs.add(path+".networkMode", "required")
	}
	if hasP && p.NetworkMode != "HOST" {
		errs.add(path+".networkMode", "processes use the host network: must be \"HOST\" or left out, got %q", p.NetworkMode)
	}
	if p.NetLimit != nil && p.NetLimit.EgressLimit < 0 {
		errs.add(path+".netLimit.egressLimit", "must not be negative, got %d", p.NetLimit.EgressLimit)
	}
	if p.NetworkMode == "USER" && !hasParameter(p.Containers, "net") {
		errs.add(path+".networkMode", "USER mode takes its network from a \"net\" parameter; none is given")
	}
	ports := map[string]string{}  // port name -> path of its first use
	hostPorts := map[int]string{} // fixed host port -> path
	for i := range p.Containers {
		validateContainer(fmt.Sprintf("%s.containers[%d]", path, i), &p.Containers[i], p.NetworkMode, ports, hostPorts, errs)
	}
	for i := range p.Processes {
		validateProcessTask(fmt.Sprintf("%s.processes[%d]", path, i), &p.Processes[i], ports, hostPorts, errs)
	}
	validatePodLifecycle(path, p, errs)
	validatePodVolumes(path, p, errs)
	validatePodRuntime(path, p, errs)
	validateDependencyRefs(path+".dependencies", p.Dependencies, errs)
}

func hasParameter(containers []Container, key string) bool {
	for _, c := range containers {
		for _, p := range c.Parameters {
			if p.Key == key {
				return true
			}
		}
	}
	return false
}

// maxStepDeadline bounds rollingupdate.stepDeadline (one day).
const maxStepDeadline = 86400

func validateDeployment(d *Deployment, errs *FieldErrors) {
	validatePolicies(d.RestartPolicy, d.KillPolicy, errs)
	validateConstraint("constraint", d.Constraint, errs)
	validateInstances("spec.instance", d.Spec.Instance, errs)
	validateStopped("spec.stoppedInstances", d.Spec.StoppedInstances, d.Spec.Instance, errs)
	*errs = append(*errs, ValidateScheduling(&d.Spec.Scheduling, "spec")...)
	validateLabels("spec.selector", d.Spec.Selector, errs)
	if d.Spec.Template == nil && len(d.Spec.Selector) == 0 {
		errs.add("spec.template", "required: a template, or a selector naming an existing application")
	}
	if d.Spec.Template != nil {
		if d.Spec.Template.Metadata != nil {
			validateLabels("spec.template.metadata.labels", d.Spec.Template.Metadata.Labels, errs)
		}
		validatePod("spec.template.spec", &d.Spec.Template.Spec, "", d.Metadata.Name, errs)
	}
	s := d.Spec.Strategy
	oneOf("spec.strategy.type", s.Type, errs, StrategyRollingUpdate, StrategyRecreate)
	if ru := s.RollingUpdate; ru != nil {
		p := "spec.strategy.rollingupdate"
		if ru.MaxUnavailable < 0 {
			errs.add(p+".maxUnavailable", "must not be negative, got %d", ru.MaxUnavailable)
		}
		nonNegative(p+".maxSurge", ru.MaxSurge, errs)
		nonNegative(p+".upgradeDuration", ru.UpgradeDuration, errs)
		oneOf(p+".rollingOrder", ru.RollingOrder, errs, RollingCreateFirst, RollingDeleteFirst)
		if ru.StepDeadline < 0 || ru.StepDeadline > maxStepDeadline { // 0 is the default
			errs.add(p+".stepDeadline", "must be between 1 and %d seconds, got %d", maxStepDeadline, ru.StepDeadline)
		}
	}
}
