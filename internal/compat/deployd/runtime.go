package deployd

import (
	"cmp"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/v1call"
)

// What GET /api/podgroups and /api/depends answer: deployd's spec rebuilt from berth's
// object (what berth ignored on the way in is not there), and deployd's runtime view of
// each instance from its task group.

// deployd's pod states (RunState) and health states (HealthState).
const (
	statePending    = 0
	stateSuccess    = 2
	stateExit       = 3
	stateFail       = 4
	stateMissing    = 6
	healthNone      = 0
	healthStarting  = 1
	healthHealthy   = 2
	healthUnhealthy = 3
	// targetStop is a pod's TargetState (deployd's ExpectState) when it was stopped on
	// purpose; Run is 0.
	targetStop = 1
)

// How deployd's container fields map to berth's (convert.go, containerSpecOf).
const (
	exposePortName   = "expose" // the port that carries Expose
	cpuPerLevel      = 0.5      // cores per CpuLimit level
	bytesPerMegabyte = 1 << 20
)

// PodGroupWithSpec is deployd's answer for a pod group.
type PodGroupWithSpec struct {
	Spec      PodGroupSpec
	PrevState []PodPrevState
	Pods      []Pod
	Healthst  int
	State     int
	OOMkilled bool
	LastError string
	UpdatedAt time.Time
}

// Pod is one instance as deployd reported it.
type Pod struct {
	InstanceNo   int
	Containers   []Container
	Healthst     int
	State        int
	OOMkilled    bool
	LastError    string
	UpdatedAt    time.Time
	TargetState  int
	DriftCount   int
	RestartCount int
	RestartAt    time.Time
}

// Container is one container of an instance.
type Container struct {
	Id            string
	Runtime       *ContainerRuntime // null until the agent reports a container (inspect.go)
	NodeName      string
	NodeIp        string
	ContainerIp   string
	NodePort      int
	ContainerPort int
	Protocol      string
}

func (h *Handler) podGroupOf(r *http.Request, d *v4.Deployment) (*PodGroupWithSpec, *v1call.Answer) {
	ns := d.Metadata.Namespace
	tgs, a := h.ownedTaskGroups(r, ns, d.Metadata.Name)
	if a != nil {
		return nil, a
	}
	pg := &PodGroupWithSpec{PrevState: []PodPrevState{}, Pods: []Pod{}, State: stateSuccess, Healthst: healthHealthy}
	pg.Spec = PodGroupSpec{NumInstances: d.Spec.Instance, RestartPolicy: restartPolicyNumber(d.RestartPolicy)}
	pg.Spec.imSpec = imSpec{Name: deploydName(d.Metadata), Namespace: cmp.Or(d.Metadata.Annotations[NamespaceAnnotation], ns),
		Version: d.Status.Revision, CreatedAt: d.Metadata.CreationTimestamp, UpdatedAt: d.Status.Updated}
	if d.Spec.Template != nil {
		pg.Spec.Pod = h.podSpecOf(r, d.Spec.Template, d.Constraint, d.KillPolicy, d.Metadata)
	}
	for _, tg := range tgs {
		p := podOf(tg)
		if v4.IsStopped(d.Spec.StoppedInstances, tg.Spec.Index) {
			p.TargetState = targetStop
		}
		pg.Pods = append(pg.Pods, p)
		pg.PrevState = append(pg.PrevState, PodPrevState{NodeName: tg.Spec.Node, IPs: podIPs(p)})
		if pg.State == stateSuccess && p.State != stateSuccess {
			pg.State, pg.LastError = p.State, p.LastError
		}
		if p.Healthst > pg.Healthst || p.Healthst == healthNone {
			pg.Healthst = p.Healthst
		}
		pg.OOMkilled = pg.OOMkilled || p.OOMkilled
		if tg.Status.Updated.After(pg.UpdatedAt) {
			pg.UpdatedAt = tg.Status.Updated
		}
	}
	return pg, nil
}

// ownedTaskGroups are the task groups of a deployment's applications, by index.
func (h *Handler) ownedTaskGroups(r *http.Request, ns, deployment string) ([]*v4.TaskGroup, *v1call.Answer) {
	tgs, a := v1call.List[*v4.TaskGroup](h.v1, r, v1call.Path("namespaces", ns, "taskgroups"))
	if a != nil {
		return nil, a
	}
	prefix := deployment + "-v" // its applications: deployment-v<revision>
	var out []*v4.TaskGroup
	for _, tg := range tgs {
		if rest, ok := strings.CutPrefix(tg.Spec.Owner.Name, prefix); ok && isDigits(rest) {
			out = append(out, tg)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Spec.Index < out[j].Spec.Index })
	return out, nil
}

func isDigits(s string) bool {
	_, err := strconv.Atoi(s)
	return s != "" && err == nil
}

func podOf(tg *v4.TaskGroup) Pod {
	st := tg.Status
	p := Pod{InstanceNo: tg.Spec.Index + 1, UpdatedAt: st.Updated, DriftCount: tg.Spec.ReschedTimes,
		RestartCount: len(tg.Spec.RecentRestarts), Containers: []Container{}}
	if n := len(tg.Spec.RecentRestarts); n > 0 {
		p.RestartAt = tg.Spec.RecentRestarts[n-1]
	}
	switch st.Phase {
	case v4.StatusRunning, v4.StatusRestarting:
		p.State = stateSuccess
	case v4.StatusFinish, v4.StatusKilled, v4.StatusKilling:
		p.State = stateExit
	case v4.StatusFailed, v4.StatusError:
		p.State, p.LastError = stateFail, st.Message
	case v4.StatusLost:
		p.State, p.LastError = stateMissing, st.Message
	default:
		p.State = statePending
	}
	switch {
	case st.Healthy == nil && p.State == stateSuccess:
		p.Healthst = healthNone
	case st.Healthy == nil:
		p.Healthst = healthStarting
	case *st.Healthy:
		p.Healthst = healthHealthy
	default:
		p.Healthst = healthUnhealthy
	}
	nodePort := 0
	for _, port := range tg.Spec.Ports {
		if port.Name == exposePortName {
			nodePort = port.HostPort
		}
	}
	containers := tg.Spec.Template.Spec.Containers
	for i, ts := range st.Tasks {
		c := Container{Id: ts.Info.ID, NodeName: tg.Spec.Node, NodeIp: st.HostIP, ContainerIp: ts.Info.IPAddress, Protocol: "tcp"}
		image := ""
		if i < len(containers) {
			image = containers[i].Image
			for _, port := range containers[i].Ports {
				if port.Name == exposePortName {
					c.ContainerPort, c.NodePort = port.ContainerPort, nodePort
				}
			}
		}
		c.Runtime = runtimeOf(tg, ts, image)
		p.OOMkilled = p.OOMkilled || ts.Info.OOMKilled
		p.Containers = append(p.Containers, c)
	}
	return p
}

func podIPs(p Pod) []string {
	ips := []string{}
	for _, c := range p.Containers {
		if c.ContainerIp != "" {
			ips = append(ips, c.ContainerIp)
		}
	}
	return ips
}

func restartPolicyNumber(p *v4.RestartPolicy) int {
	if p == nil {
		return RestartOnFail // berth's and BCS's default
	}
	switch p.Policy {
	case v4.RestartNever:
		return RestartNever
	case v4.RestartAlways:
		return RestartAlways
	}
	return RestartOnFail
}

// podSpecOf rebuilds deployd's pod spec from a template; dependencies get their deployd
// names back from the dependency objects.
func (h *Handler) podSpecOf(r *http.Request, t *v4.PodTemplate, cons *v4.Constraint, kill *v4.KillPolicy, m v4.ObjectMeta) PodSpec {
	p := PodSpec{Network: t.Spec.NetworkMode, Annotation: "{}", Containers: []ContainerSpec{}, Filters: []string{},
		Dependencies: []Dependency{}, Stateful: m.Annotations[v4.StatefulAnnotation] == "true"}
	p.imSpec = imSpec{Name: deploydName(m), Namespace: cmp.Or(m.Annotations[NamespaceAnnotation], m.Namespace), CreatedAt: m.CreationTimestamp}
	if p.Network == "BRIDGE" {
		p.Network = ""
	}
	if t.Metadata != nil {
		p.Labels = t.Metadata.Labels
	}
	if kill != nil {
		p.KillTimeout = kill.GracePeriod
	}
	for _, c := range t.Spec.Containers {
		p.Containers = append(p.Containers, containerSpecOf(c))
		for _, hc := range c.HealthChecks {
			if hc.Type == v4.CheckCommand && hc.Command != nil && p.HealthConfig.Cmd == "" {
				p.HealthConfig = HealthConfig{Cmd: hc.Command.Value, Options: HealthOptions{Interval: hc.IntervalSeconds, Timeout: hc.TimeoutSeconds, Retries: hc.ConsecutiveFailures}}
				p.SetupTime = hc.GracePeriodSeconds
			}
		}
	}
	for _, dep := range t.Spec.Dependencies {
		name := dep.Name
		if obj, a := v1call.Get[v4.Dependency](h.v1, r, v1call.Path("namespaces", dep.Namespace, "dependencies", dep.Name)); a == nil {
			name = deploydName(obj.Metadata)
		}
		policy := 0 // namespace level
		if dep.Policy == "node" {
			policy = 1
		}
		p.Dependencies = append(p.Dependencies, Dependency{PodName: name, Policy: policy})
	}
	if cons != nil {
		for _, item := range cons.IntersectionItem {
			for _, d := range item.UnionData {
				if d.Text == nil {
					continue
				}
				key := d.Name
				if key == "hostname" {
					key = "node"
				}
				switch d.Operate {
				case v4.OpCluster:
					p.Filters = append(p.Filters, "constraint:"+key+"=="+d.Text.Value)
				case v4.OpUnlike:
					p.Filters = append(p.Filters, "constraint:"+key+"!="+d.Text.Value)
				}
			}
		}
	}
	return p
}

func containerSpecOf(c v4.Container) ContainerSpec {
	out := ContainerSpec{Image: c.Image, WorkingDir: c.WorkingDir, Env: []string{}, Command: []string{}}
	out.Name = c.Name
	if c.Command != "" {
		out.Command = append([]string{c.Command}, c.Args...)
	}
	for _, e := range c.Env {
		out.Env = append(out.Env, e.Name+"="+e.Value)
	}
	if c.Resources != nil && c.Resources.Limits != nil {
		if cpu, err := strconv.ParseFloat(string(c.Resources.Limits.CPU), 64); err == nil && cpu > 0 {
			out.CpuLimit = max(1, int(math.Round(cpu/cpuPerLevel)))
		}
		if mem, err := strconv.ParseFloat(string(c.Resources.Limits.Memory), 64); err == nil && mem > 0 {
			out.MemoryLimit = int64(mem * bytesPerMegabyte)
		}
	}
	for _, p := range c.Ports {
		if p.Name == exposePortName {
			out.Expose = p.ContainerPort
		}
	}
	for _, v := range c.Volumes {
		if v.Volume.Instance {
			out.Volumes = append(out.Volumes, v.Volume.MountPath)
			continue
		}
		sv := v.Volume.HostPath + ":" + v.Volume.MountPath
		if v.Volume.ReadOnly {
			sv += ":ro"
		}
		out.SystemVolumes = append(out.SystemVolumes, sv)
	}
	return out
}
