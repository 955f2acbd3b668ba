package deployd

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// How deployd's specs become berth's objects (docs/compat.md, "deployd"): a pod group is
// a deployment rolled one instance at a time, removing before deploying as deployd did; a
// dependency spec is a dependency in the Namespace.

// Namespace holds what deployd kept outside any namespace: registered dependencies
// (deployd's were global, berth's live in a namespace) and notify callbacks.
const Namespace = "deployd"

// NameAnnotation keeps deployd's name of an object whose berth name had to differ.
const NameAnnotation = "deployd.lain.io/name"

// berthNamePattern is what a deployd name may hold to be mapped: berth's names with '.'.
var berthNamePattern = regexp.MustCompile(`^[a-z][a-z0-9.-]*$`)

// BerthName maps a deployd name ("hello.web.web") to berth's ("hello-web-web").
func BerthName(field, name string) (string, error) {
	switch {
	case name == "":
		return "", fmt.Errorf("%s: required", field)
	case len(name) > 63:
		return "", fmt.Errorf("%s: must be at most 63 characters, got %d", field, len(name))
	case !berthNamePattern.MatchString(name) || strings.HasSuffix(name, "-") || strings.HasSuffix(name, "."):
		return "", fmt.Errorf("%s: must be lowercase letters, digits, '-' and '.', starting with a letter and ending with a letter or digit, got %q", field, name)
	}
	return strings.ReplaceAll(name, ".", "-"), nil
}

// converted is a berth document built from a deployd spec, with what berth ignored.
type converted struct {
	obj      v4.Object
	warnings []string
}

// deploymentOf builds the deployment of a pod group.
func deploymentOf(pg *PodGroupSpec) (converted, error) {
	name, err := BerthName("Name", pg.Name)
	if err != nil {
		return converted{}, err
	}
	ns, err := BerthName("Namespace", pg.Namespace)
	if err != nil {
		return converted{}, err
	}
	if pg.NumInstances < 0 {
		return converted{}, fmt.Errorf("NumInstances: must not be negative (0 stops every instance), got %d", pg.NumInstances)
	}
	var c converted
	tmpl, cons, err := templateOf(&pg.Pod, "Pod", &c.warnings)
	if err != nil {
		return converted{}, err
	}
	policy, err := restartPolicyOf(pg.RestartPolicy)
	if err != nil {
		return converted{}, err
	}
	d := &v4.Deployment{
		TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindDeployment},
		Metadata: v4.ObjectMeta{Name: name, Namespace: ns, Labels: pg.Pod.Labels,
			Annotations: map[string]string{NameAnnotation: pg.Name}},
		RestartPolicy: &v4.RestartPolicy{Policy: policy},
		KillPolicy:    killPolicyOf(pg.Pod.KillTimeout),
		Constraint:    cons,
		Spec: v4.DeploymentSpec{Instance: pg.NumInstances, Template: tmpl, Strategy: v4.DeploymentStrategy{
			Type: v4.StrategyRollingUpdate, RollingUpdate: &v4.RollingUpdate{MaxUnavailable: 1, MaxSurge: 1, RollingOrder: v4.RollingDeleteFirst}}},
	}
	if pg.Pod.Stateful {
		d.Metadata.Annotations[v4.StatefulAnnotation] = "true"
	}
	c.obj = d
	return c, nil
}

// dependencyOf builds the dependency of a registered dependency spec.
func dependencyOf(spec *PodSpec) (converted, error) {
	name, err := BerthName("Name", spec.Name)
	if err != nil {
		return converted{}, err
	}
	if len(spec.Dependencies) > 0 {
		return converted{}, fmt.Errorf("Dependencies: a dependency cannot have dependencies itself")
	}
	var c converted
	tmpl, cons, err := templateOf(spec, "", &c.warnings)
	if err != nil {
		return converted{}, err
	}
	c.obj = &v4.Dependency{
		TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindDependency},
		Metadata: v4.ObjectMeta{Name: name, Namespace: Namespace, Labels: spec.Labels,
			Annotations: map[string]string{NameAnnotation: spec.Name}},
		RestartPolicy: &v4.RestartPolicy{Policy: v4.RestartAlways},
		KillPolicy:    killPolicyOf(spec.KillTimeout),
		Constraint:    cons,
		Spec:          v4.DependencySpec{Template: *tmpl},
	}
	return c, nil
}

func restartPolicyOf(p int) (string, error) {
	switch p {
	case RestartNever:
		return v4.RestartNever, nil
	case RestartAlways:
		return v4.RestartAlways, nil
	case RestartOnFail:
		return v4.RestartOnFailure, nil
	}
	return "", fmt.Errorf("RestartPolicy: must be 0 (never), 1 (always) or 2 (on failure), got %d", p)
}

// killPolicyOf clamps KillTimeout to 10-120 s, as deployd did.
func killPolicyOf(seconds int) *v4.KillPolicy {
	return &v4.KillPolicy{GracePeriod: min(max(seconds, 10), 120)}
}

// templateOf builds the pod template and the constraint of a pod spec. at prefixes the
// field names in errors and warnings ("Pod").
func templateOf(p *PodSpec, at string, warnings *[]string) (*v4.PodTemplate, *v4.Constraint, error) {
	field := func(f string) string {
		if at == "" {
			return f
		}
		return at + "." + f
	}
	warn := func(f, why string) { *warnings = append(*warnings, field(f)+" is ignored by berth ("+why+")") }
	if len(p.Containers) == 0 {
		return nil, nil, fmt.Errorf("%s: at least one container is required", field("Containers"))
	}
	spec := v4.PodSpec{NetworkMode: "BRIDGE"}
	if p.Network != "" {
		spec.NetworkMode = p.Network // a Docker network by name
	}
	for i, ctr := range p.Containers {
		c, err := containerOf(&ctr, field(fmt.Sprintf("Containers[%d]", i)), warn)
		if err != nil {
			return nil, nil, err
		}
		spec.Containers = append(spec.Containers, c)
	}
	if check := healthCheckOf(p); check != nil {
		spec.Containers[0].HealthChecks = []v4.HealthCheck{*check}
	}
	for i, d := range p.Dependencies {
		name, err := BerthName(field(fmt.Sprintf("Dependencies[%d].PodName", i)), d.PodName)
		if err != nil {
			return nil, nil, err
		}
		policy := "namespace"
		switch d.Policy {
		case 0:
		case 1:
			policy = "node"
		default:
			return nil, nil, fmt.Errorf("%s: must be 0 (namespace) or 1 (node), got %d", field(fmt.Sprintf("Dependencies[%d].Policy", i)), d.Policy)
		}
		spec.Dependencies = append(spec.Dependencies, v4.DependencyRef{Name: name, Namespace: Namespace, Policy: policy})
	}
	cons, err := constraintOf(p.Filters, field("Filters"), warn)
	if err != nil {
		return nil, nil, err
	}
	if p.Annotation != "" && p.Annotation != "{}" {
		warn("Annotation", "stream ports and health check URLs in it are not read; use a health check command")
	}
	if p.PrevState.NodeName != "" || len(p.PrevState.IPs) > 0 {
		warn("PrevState", "berth keeps where instances run itself")
	}
	tmpl := &v4.PodTemplate{Spec: spec}
	if len(p.Labels) > 0 {
		tmpl.Metadata = &v4.TemplateMeta{Labels: p.Labels}
	}
	return tmpl, cons, nil
}

// containerOf maps a container: deployd's Entrypoint and Command are Docker's, berth's
// command and args BCS's (the command replaces the image's entrypoint).
func containerOf(c *ContainerSpec, at string, warn func(field, why string)) (v4.Container, error) {
	if c.Image == "" {
		return v4.Container{}, fmt.Errorf("%s.Image: required", at)
	}
	if c.CpuLimit < 0 || c.MemoryLimit < 0 {
		return v4.Container{}, fmt.Errorf("%s: CpuLimit and MemoryLimit must not be negative", at)
	}
	if len(c.CloudVolumes) > 0 {
		return v4.Container{}, fmt.Errorf("%s.CloudVolumes: deployd's shared cloud volumes (a directory of a mounted cloud disk, "+
			"the same for every instance) are not mapped by berth: no agent mounts cloud disks; mount the disk on the nodes and "+
			"give its directory as a SystemVolumes host path (the nodes' --host-volumes must list it)", at)
	}
	out := v4.Container{Name: c.Name, Image: c.Image, WorkingDir: c.WorkingDir}
	cmd := append(append([]string{}, c.Entrypoint...), c.Command...)
	if len(cmd) > 0 {
		out.Command, out.Args = cmd[0], cmd[1:]
	}
	for _, e := range c.Env {
		k, v, _ := strings.Cut(e, "=")
		out.Env = append(out.Env, v4.EnvVar{Name: k, Value: v})
	}
	level := c.CpuLimit
	if level == 0 {
		level = 2 // deployd's default level
	}
	limits := &v4.ResourceList{CPU: v4.Quantity(strconv.FormatFloat(float64(level)*cpuPerLevel, 'f', -1, 64))}
	if c.MemoryLimit > 0 {
		limits.Memory = v4.Quantity(strconv.FormatInt(int64(math.Ceil(float64(c.MemoryLimit)/bytesPerMegabyte)), 10))
	}
	out.Resources = &v4.Resources{Limits: limits}
	if c.Expose > 0 {
		out.Ports = []v4.Port{{Name: exposePortName, ContainerPort: c.Expose, Protocol: "tcp"}}
	}
	for _, mp := range c.Volumes {
		// deployd's per-instance directory (/data/lain/volumes/<ns>/<name>/<instance>
		// [/c<index>]/<path> on the node): berth's instance volume, which its agent keeps
		// per instance and container the same way (docs/compat.md, "Lain deployd").
		out.Volumes = append(out.Volumes, v4.Volume{Volume: v4.VolumeMount{MountPath: mp, Instance: true}})
	}
	for i, sv := range c.SystemVolumes {
		parts := strings.Split(sv, ":")
		if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" || (len(parts) == 3 && parts[2] != "ro" && parts[2] != "rw") {
			return v4.Container{}, fmt.Errorf("%s.SystemVolumes[%d]: must be host:container[:ro|rw], got %q", at, i, sv)
		}
		out.Volumes = append(out.Volumes, v4.Volume{Volume: v4.VolumeMount{HostPath: parts[0], MountPath: parts[1], ReadOnly: len(parts) == 3 && parts[2] == "ro"}})
	}
	if c.User != "" {
		warn(at+".User", "containers run as their image's user")
	}
	if len(c.DnsSearch) > 0 {
		warn(at+".DnsSearch", "containers use the node's DNS server and search domains")
	}
	if c.LogConfig.Type != "" {
		warn(at+".LogConfig", "the agent keeps the containers' logs")
	}
	return out, nil
}

// healthCheckOf maps HealthConfig to a COMMAND check, with deployd's defaults and floors
// (10 s, 3 s, 3 failures) and SetupTime (0-300 s) as the grace period.
func healthCheckOf(p *PodSpec) *v4.HealthCheck {
	hc := p.HealthConfig
	if hc.Cmd == "" || hc.Cmd == "none" {
		return nil
	}
	return &v4.HealthCheck{Type: v4.CheckCommand, Command: &v4.CommandCheck{Value: hc.Cmd},
		IntervalSeconds: max(hc.Options.Interval, 10), TimeoutSeconds: max(hc.Options.Timeout, 3),
		ConsecutiveFailures: max(hc.Options.Retries, 3), GracePeriodSeconds: min(max(p.SetupTime, 0), 300)}
}

// constraintOf maps Swarm's node filters: constraint:node==X keeps the pod on X,
// constraint:node!=X off it. Soft filters (==~) and affinities are preferences berth does
// not have.
func constraintOf(filters []string, at string, warn func(field, why string)) (*v4.Constraint, error) {
	var items []v4.ConstraintItem
	for i, f := range filters {
		expr, ok := strings.CutPrefix(f, "constraint:")
		if !ok {
			warn(fmt.Sprintf("%s[%d]", at, i), "only constraint:node==X and constraint:node!=X are read")
			continue
		}
		op := v4.OpCluster
		key, value, eq := strings.Cut(expr, "==")
		if !eq {
			key, value, ok = strings.Cut(expr, "!=")
			if !ok {
				return nil, fmt.Errorf("%s[%d]: must be constraint:KEY==VALUE or constraint:KEY!=VALUE, got %q", at, i, f)
			}
			op = v4.OpUnlike
		}
		if strings.HasPrefix(value, "~") {
			warn(fmt.Sprintf("%s[%d]", at, i), "soft constraints are preferences berth does not have")
			continue
		}
		name := strings.TrimSpace(key)
		if name == "node" {
			name = "hostname"
		}
		items = append(items, v4.ConstraintItem{UnionData: []v4.ConstraintData{{Name: name, Operate: op, Type: 3, Text: &v4.TextValue{Value: value}}}})
	}
	if len(items) == 0 {
		return nil, nil
	}
	return &v4.Constraint{IntersectionItem: items}, nil
}
