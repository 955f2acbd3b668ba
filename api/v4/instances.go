package v4

import "maps"

// TemplateOf returns the pod template the instances of a workload run (applications,
// processes, deployments, daemonsets, dependencies), or nil for other objects.
func TemplateOf(obj Object) *PodTemplate {
	switch o := obj.(type) {
	case *Application:
		return &o.Spec.Template
	case *Process:
		return &o.Spec.Template
	case *Deployment:
		return o.Spec.Template
	case *Daemonset:
		return &o.Spec.Template
	case *Dependency:
		return &o.Spec.Template
	case *Job:
		return &o.Spec.Template
	}
	return nil
}

// InstanceLabels are the labels of a workload's instances: the object's, with its
// template's winning (BCS merges them without overwriting the pod's keys).
func InstanceLabels(meta *ObjectMeta, tmpl *PodTemplate) map[string]string {
	labels := maps.Clone(meta.Labels)
	if tmpl != nil && tmpl.Metadata != nil && len(tmpl.Metadata.Labels) > 0 {
		if labels == nil {
			labels = map[string]string{}
		}
		maps.Copy(labels, tmpl.Metadata.Labels)
	}
	return labels
}

// Ports lists every port of a pod's tasks, containers' then processes'.
func (p *PodSpec) Ports() []Port {
	var out []Port
	for _, c := range p.Containers {
		out = append(out, c.Ports...)
	}
	for _, t := range p.Processes {
		out = append(out, t.Ports...)
	}
	return out
}

// HealthChecks lists every health check of a pod's tasks, containers' then processes'.
func (p *PodSpec) HealthChecks() []HealthCheck {
	var out []HealthCheck
	for _, c := range p.Containers {
		out = append(out, c.HealthChecks...)
	}
	for _, t := range p.Processes {
		out = append(out, t.HealthChecks...)
	}
	return out
}

// PortNames lists the names of a pod's ports.
func PortNames(p *PodSpec) []string {
	ports := p.Ports()
	names := make([]string, len(ports))
	for i, pt := range ports {
		names[i] = pt.Name
	}
	return names
}

// Selects reports whether a service's selector matches labels: every label of the
// selector is among them (BCS ANDs them). An empty selector matches nothing.
func Selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
