package v4

import (
	"slices"
	"strings"
)

// Default fills in the values BCS (and berth) assume when a field is left out, and
// normalises the case of enumerated values ("onfailure" -> "OnFailure", "ClUSTER" ->
// "CLUSTER"). It is idempotent; values it cannot recognise are left for Validate to report.
func Default(obj Object) {
	if p := StoppedInstancesOf(obj); p != nil {
		slices.Sort(*p) // IsStopped searches it
	}
	m := obj.GetMeta()
	if m.Namespace == "" && obj.GetKind().Namespaced() {
		m.Namespace = DefaultNamespace
	}
	tm := typeMetaOf(obj)
	switch o := obj.(type) {
	case *Application:
		defaultWorkload(&o.Workload, tm.Kind)
	case *Process:
		defaultWorkload(&o.Workload, tm.Kind)
	case *Deployment:
		o.RestartPolicy, o.KillPolicy = defaultPolicies(o.RestartPolicy, o.KillPolicy)
		defaultConstraint(o.Constraint)
		if o.Spec.Template != nil {
			defaultPod(&o.Spec.Template.Spec, podKind(&o.Spec.Template.Spec))
		}
		defaultStrategy(&o.Spec.Strategy)
	case *Daemonset:
		// A daemon is kept running on its node: Always unless the spec says otherwise.
		if o.RestartPolicy == nil {
			o.RestartPolicy = &RestartPolicy{}
		}
		if o.RestartPolicy.Policy == "" {
			o.RestartPolicy.Policy = RestartAlways
		}
		o.RestartPolicy, o.KillPolicy = defaultPolicies(o.RestartPolicy, o.KillPolicy)
		defaultConstraint(o.Constraint)
		defaultPod(&o.Spec.Template.Spec, podKind(&o.Spec.Template.Spec))
	case *Service:
		o.Spec.Type = canon(o.Spec.Type, "ClusterIP", "None")
		if o.Spec.Type == "" {
			o.Spec.Type = "ClusterIP"
		}
		for i := range o.Spec.Ports {
			o.Spec.Ports[i].Protocol = strings.ToLower(o.Spec.Ports[i].Protocol)
			if o.Spec.Ports[i].Protocol == "" { // as a pod's port, and as BCS took it
				o.Spec.Ports[i].Protocol = "tcp"
			}
		}
	case *Notify:
		defaultNotify(o)
	case *ConfigMap:
		for k, d := range o.Datas {
			d.Type = strings.ToLower(d.Type)
			o.Datas[k] = d
		}
	case *Dependency:
		defaultDependency(o)
	case *CSIVolume:
		defaultVolume(o)
	case *Workflow:
		defaultWorkflowSpec(&o.Spec)
	case *WorkflowTemplate:
		defaultWorkflowSpec(&o.Spec)
	case *Job:
		defaultJob(o)
	case *CronJob:
		defaultCronJob(o)
	case *CronWorkflow:
		defaultCron(&o.Spec.CronSchedule)
		defaultWorkflowSpec(&o.Spec.WorkflowSpec)
	}
	defaultDependencyRefs(PodSpecOf(obj), m.Namespace)
}

// podKind says which kind a pod template belongs to, judged by what it holds.
func podKind(p *PodSpec) Kind {
	if len(p.Processes) > 0 && len(p.Containers) == 0 {
		return KindProcess
	}
	return KindApplication
}

func defaultWorkload(w *Workload, kind Kind) {
	w.RestartPolicy, w.KillPolicy = defaultPolicies(w.RestartPolicy, w.KillPolicy)
	defaultConstraint(w.Constraint)
	defaultPod(&w.Spec.Template.Spec, kind)
}

func defaultPolicies(rp *RestartPolicy, kp *KillPolicy) (*RestartPolicy, *KillPolicy) {
	if rp == nil {
		rp = &RestartPolicy{}
	}
	rp.Policy = canon(rp.Policy, RestartNever, RestartAlways, RestartOnFailure)
	if rp.Policy == "" {
		rp.Policy = RestartOnFailure
	}
	if kp == nil {
		kp = &KillPolicy{}
	}
	if kp.GracePeriod == 0 {
		kp.GracePeriod = 1 // BCS stops with max(1, gracePeriod)
	}
	return rp, kp
}

func defaultConstraint(c *Constraint) {
	if c == nil {
		return
	}
	for i := range c.IntersectionItem {
		for j := range c.IntersectionItem[i].UnionData {
			d := &c.IntersectionItem[i].UnionData[j]
			d.Operate = strings.ToUpper(strings.TrimSpace(d.Operate))
		}
	}
}

func defaultPod(p *PodSpec, kind Kind) {
	p.NetworkType = strings.ToLower(p.NetworkType)
	if p.NetworkType == "" {
		p.NetworkType = "cnm"
	}
	p.NetworkMode = canon(p.NetworkMode, "HOST", "BRIDGE", "NONE", "USER")
	if p.NetworkMode == "" {
		// Processes share the host's network (docs/spec.md, Defaults). For containers BCS falls back to
		// Docker's "none", which silently drops every port; berth uses Docker's default.
		p.NetworkMode = "BRIDGE"
		if kind == KindProcess {
			p.NetworkMode = "HOST"
		}
	}
	for i := range p.Containers {
		c := &p.Containers[i]
		c.ImagePullPolicy = canon(c.ImagePullPolicy, PullAlways, PullIfNotPresent, PullNever)
		if c.ImagePullPolicy == "" {
			c.ImagePullPolicy = PullIfNotPresent
		}
		c.Type = strings.ToUpper(c.Type)
		defaultPorts(c.Ports)
		c.Resources = defaultResources(c.Resources)
		defaultChecks(c.HealthChecks)
		defaultRefs(c.ConfigMaps, c.Secrets)
	}
	for i := range p.Processes {
		t := &p.Processes[i]
		if t.StartGracePeriod == 0 {
			t.StartGracePeriod = 1
		}
		for j := range t.URIs {
			u := &t.URIs[j]
			u.PullPolicy = canon(u.PullPolicy, PullAlways, PullIfNotPresent)
			if u.PullPolicy == "" {
				u.PullPolicy = PullIfNotPresent
			}
		}
		defaultPorts(t.Ports)
		t.Resources = defaultResources(t.Resources)
		defaultChecks(t.HealthChecks)
		defaultRefs(t.ConfigMaps, t.Secrets)
	}
}

func defaultPorts(ports []Port) {
	for i := range ports {
		ports[i].Protocol = strings.ToLower(ports[i].Protocol)
		if ports[i].Protocol == "" {
			ports[i].Protocol = "tcp"
		}
	}
}

// defaultResources copies limits into requests when requests.cpu is empty (BCS), and
// gives a task with no resources at all BCS's 1 cpu, 64 MB memory and 64 MB disk.
func defaultResources(r *Resources) *Resources {
	if r == nil || (r.Requests == nil && r.Limits == nil) {
		if r == nil {
			r = &Resources{}
		}
		r.Requests = &ResourceList{CPU: "1", Memory: "64", Storage: "64"}
		return r
	}
	if (r.Requests == nil || r.Requests.CPU == "") && r.Limits != nil {
		req := &ResourceList{}
		for _, pair := range [][2]*Quantity{{&req.CPU, &r.Limits.CPU}, {&req.Memory, &r.Limits.Memory}, {&req.Storage, &r.Limits.Storage}} {
			if *pair[1] != "-1" { // unlimited is not a request
				*pair[0] = *pair[1]
			}
		}
		r.Requests = req
	}
	return r
}

// Health check defaults of BCS's driver, applied to fields left at 0.
const (
	DefaultCheckInterval = 60
	DefaultCheckTimeout  = 20
	DefaultCheckGrace    = 300
	DefaultCheckDelay    = 10
)

func defaultChecks(checks []HealthCheck) {
	for i := range checks {
		h := &checks[i]
		h.Type = canon(h.Type, CheckHTTP, CheckTCP, CheckCommand, CheckRemoteHTTP, CheckRemoteTCP)
		if h.IntervalSeconds == 0 {
			h.IntervalSeconds = DefaultCheckInterval
		}
		if h.TimeoutSeconds == 0 {
			h.TimeoutSeconds = min(DefaultCheckTimeout, max(1, h.IntervalSeconds-1))
		}
		if h.GracePeriodSeconds == 0 {
			h.GracePeriodSeconds = DefaultCheckGrace
		}
		if h.DelaySeconds == 0 {
			h.DelaySeconds = DefaultCheckDelay
		}
		if h.HTTP != nil {
			h.HTTP.Scheme = strings.ToLower(h.HTTP.Scheme)
			if h.HTTP.Scheme == "" {
				h.HTTP.Scheme = "http"
			}
			if h.HTTP.Path == "" {
				h.HTTP.Path = "/"
			}
		}
	}
}

func defaultRefs(cms []ConfigMapRef, secrets []SecretRef) {
	for i := range cms {
		for j := range cms[i].Items {
			cms[i].Items[j].Type = strings.ToLower(cms[i].Items[j].Type)
		}
	}
	for i := range secrets {
		for j := range secrets[i].Items {
			secrets[i].Items[j].Type = strings.ToLower(secrets[i].Items[j].Type)
		}
	}
}

func defaultStrategy(s *DeploymentStrategy) {
	s.Type = canon(s.Type, StrategyRollingUpdate, StrategyRecreate)
	if s.Type == "" {
		s.Type = StrategyRollingUpdate
	}
	if s.RollingUpdate == nil {
		s.RollingUpdate = &RollingUpdate{}
	}
	ru := s.RollingUpdate
	if ru.MaxUnavailable == 0 {
		ru.MaxUnavailable = 1
	}
	if ru.MaxSurge == 0 {
		ru.MaxSurge = 1
	}
	ru.RollingOrder = canon(ru.RollingOrder, RollingCreateFirst, RollingDeleteFirst)
	if ru.RollingOrder == "" {
		ru.RollingOrder = RollingCreateFirst
	}
	if ru.StepDeadline == 0 {
		ru.StepDeadline = DefaultStepDeadline
	}
}

// canon returns the allowed value equal to v ignoring case and surrounding space, or v.
func canon(v string, allowed ...string) string {
	t := strings.TrimSpace(v)
	for _, a := range allowed {
		if strings.EqualFold(t, a) {
			return a
		}
	}
	return v
}
