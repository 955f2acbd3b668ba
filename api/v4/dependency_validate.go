package v4

import (
	"fmt"
	"strings"
)

// defaultDependency makes Always the default restart policy: a shared pod that ends while
// dependents need it is started again, whatever the reason it ended.
func defaultDependency(d *Dependency) {
	if d.RestartPolicy == nil {
		d.RestartPolicy = &RestartPolicy{}
	}
	if strings.TrimSpace(d.RestartPolicy.Policy) == "" {
		d.RestartPolicy.Policy = RestartAlways
	}
	d.RestartPolicy, d.KillPolicy = defaultPolicies(d.RestartPolicy, d.KillPolicy)
	defaultConstraint(d.Constraint)
	defaultPod(&d.Spec.Template.Spec, podKind(&d.Spec.Template.Spec))
}

// defaultDependencyRefs fills in the dependent's namespace and the namespace policy.
func defaultDependencyRefs(p *PodSpec, namespace string) {
	if p == nil {
		return
	}
	for i := range p.Dependencies {
		r := &p.Dependencies[i]
		if r.Namespace == "" {
			r.Namespace = namespace
		}
		r.Policy = canon(r.Policy, DependencyPolicyNode, DependencyPolicyNamespace)
		if r.Policy == "" {
			r.Policy = DependencyPolicyNamespace
		}
	}
}

// PodSpecOf returns the pod template spec of the kinds that have one (nil for the others,
// and for a deployment that binds an existing application).
func PodSpecOf(o Object) *PodSpec {
	switch x := o.(type) {
	case *Application:
		return &x.Spec.Template.Spec
	case *Process:
		return &x.Spec.Template.Spec
	case *Deployment:
		if x.Spec.Template != nil {
			return &x.Spec.Template.Spec
		}
	case *Daemonset:
		return &x.Spec.Template.Spec
	case *Dependency:
		return &x.Spec.Template.Spec
	case *Job:
		return &x.Spec.Template.Spec
	case *CronJob: // every check of a pod applies to the job it creates
		return &x.Spec.JobTemplate.Spec.Template.Spec
	}
	return nil
}

func validateDependency(d *Dependency, errs *FieldErrors) {
	validatePolicies(d.RestartPolicy, d.KillPolicy, errs)
	validateConstraint("constraint", d.Constraint, errs)
	if m := d.Spec.Template.Metadata; m != nil {
		validateLabels("spec.template.metadata.labels", m.Labels, errs)
		validateLabels("spec.template.metadata.annotations", m.Annotations, errs)
	}
	validatePod("spec.template.spec", &d.Spec.Template.Spec, "", d.Metadata.Name, errs)
	if len(d.Spec.Template.Spec.Dependencies) > 0 {
		errs.add("spec.template.spec.dependencies", "a dependency cannot itself declare dependencies")
	}
}

// validateDependencyRefs checks a pod's dependencies: names, policies, no duplicates.
func validateDependencyRefs(path string, refs []DependencyRef, errs *FieldErrors) {
	seen := map[string]string{}
	for i, r := range refs {
		p := fmt.Sprintf("%s[%d]", path, i)
		checkName(p+".name", r.Name, errs)
		if r.Namespace != DefaultNamespace {
			checkName(p+".namespace", r.Namespace, errs)
		}
		oneOf(p+".policy", r.Policy, errs, DependencyPolicyNamespace, DependencyPolicyNode)
		id := r.Namespace + "/" + r.Name
		if first, dup := seen[id]; dup {
			errs.add(p, "dependency %s is declared twice (first at %s)", id, first)
			continue
		}
		seen[id] = p
	}
}
