package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// taskGroup writes one instance as `kubectl describe pod` and `nomad alloc status` do:
// where it runs, its phase and why, its addresses and ports, health, restarts, cards, and
// each task's state; then the pod it runs.
func (d *describer) taskGroup(tg *v4.TaskGroup) {
	s, st := &tg.Spec, &tg.Status
	d.kv("Owner", "%s/%s (instance %d)", s.Owner.Kind, s.Owner.Name, s.Index)
	node := orNone(s.Node)
	if st.HostIP != "" {
		node += " (" + st.HostIP + ")"
	}
	d.kv("Node", "%s", node)
	phase := orNone(st.Phase)
	if s.Desired == v4.DesiredStopped {
		phase += " (asked to stop)"
	}
	d.kv("Status", "%s", phase)
	if st.Reason != "" {
		d.kv("Reason", "%s", st.Reason)
	}
	if st.Message != "" {
		d.kv("Message", "%s", st.Message)
	}
	for i, b := range st.PortsTaken {
		d.kvCont(i, "Ports Taken", b.String())
	}
	d.when("Started", st.StartedAt)
	d.when("Finished", st.FinishedAt)
	d.when("Updated", st.Updated)
	d.kv("IPs", "%s", orNone(strings.Join(taskGroupIPs(tg), ", ")))
	d.taskGroupPorts(tg)
	d.kv("Health", "%s", taskGroupHealth(st))
	if r := st.Remote; r != nil {
		state := "passing"
		if !r.Healthy {
			state = "failing: " + orNone(r.Message)
		}
		d.kv("Remote Checks", "%s for %s", state, age(r.Since, d.now))
	}
	d.kv("Restarts", "%s", d.restarts(s))
	d.kv("Resources", "%s", resourceSummary(s.Resources))
	if o := s.Overhead; o.CPU > 0 || o.MemoryMB > 0 || o.DiskMB > 0 {
		d.kv("Of Which", "the executor's overhead: %s", resourceSummary(o))
	}
	d.taskGroupGPUs(s.GPUs, st.GPUProblem)
	d.taskStates(st.Tasks)
	d.template(&s.Template)
}

// kvCont writes the i-th value of a key: the key on the first line, the others aligned
// under it.
func (d *describer) kvCont(i int, key, value string) {
	if i == 0 {
		d.kv(key, "%s", value)
		return
	}
	d.line(fmt.Sprintf("%-*s%s", max(keyWidth-2*d.level, len(key)+2), "", value))
}

// when writes a time with its age; nothing when it is zero.
func (d *describer) when(key string, t time.Time) {
	if !t.IsZero() {
		d.kv(key, "%s (%s ago)", t.Format(time.RFC3339), age(t, d.now))
	}
}

// taskGroupIPs are the tasks' own addresses (a container on a bridge), each once, or the
// node's when the tasks share its network.
func taskGroupIPs(tg *v4.TaskGroup) []string {
	var ips []string
	for _, t := range tg.Status.Tasks {
		if ip := t.Info.IPAddress; ip != "" && !slices.Contains(ips, ip) {
			ips = append(ips, ip)
		}
	}
	if len(ips) == 0 && tg.Status.HostIP != "" {
		ips = append(ips, tg.Status.HostIP+" (host)")
	}
	return ips
}

// taskGroupPorts writes every port of the pod's tasks with the host port it holds: the
// template says the task and the container port, the spec the host port given out.
func (d *describer) taskGroupPorts(tg *v4.TaskGroup) {
	held := map[string]v4.AllocatedPort{}
	for _, p := range tg.Spec.Ports {
		held[p.Name] = p
	}
	var rows [][]string
	add := func(task string, p v4.Port) {
		host := "-"
		if h, ok := held[p.Name]; ok {
			host = strconv.Itoa(h.HostPort)
			if h.Random {
				host += " (random)"
			}
			delete(held, p.Name)
		} else if p.HostPort > 0 {
			host = strconv.Itoa(p.HostPort)
		}
		cport := "-"
		if p.ContainerPort > 0 {
			cport = strconv.Itoa(p.ContainerPort)
		}
		rows = append(rows, []string{orNone(p.Name), task, cport, host, orNone(p.Protocol)})
	}
	names := v4.TaskNames(&tg.Spec.Template.Spec)
	for i, c := range tg.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			add(names[i], p)
		}
	}
	for i, pr := range tg.Spec.Template.Spec.Processes {
		for _, p := range pr.Ports {
			add(names[len(tg.Spec.Template.Spec.Containers)+i], p)
		}
	}
	for _, p := range tg.Spec.Ports { // held, but no longer in the template
		if _, ok := held[p.Name]; ok {
			rows = append(rows, []string{orNone(p.Name), "-", "-", strconv.Itoa(p.HostPort), orNone(p.Protocol)})
		}
	}
	if len(rows) == 0 {
		d.kv("Ports", "%s", none)
		return
	}
	d.section("Ports", func() { d.table([]string{"NAME", "TASK", "CONTAINER PORT", "HOST PORT", "PROTOCOL"}, rows) })
}

// table writes rows under headers, indented at the current level.
func (d *describer) table(headers []string, rows [][]string) {
	var b strings.Builder
	_ = writeTable(&b, headers, rows)
	for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		d.line(l)
	}
}

// taskGroupHealth says whether the group's local checks pass, and whether a failure of
// them ended it.
func taskGroupHealth(st *v4.TaskGroupStatus) string {
	h := "unknown (no local checks, or none answered yet)"
	if st.Healthy != nil {
		h = map[bool]string{true: "healthy", false: "unhealthy"}[*st.Healthy]
	}
	if st.HealthKilled {
		h += "; killed after failing its health checks"
	}
	return h
}

// restarts reads like "3 (last 2m ago), 2 in the last 30m, 1 crash loop".
func (d *describer) restarts(s *v4.TaskGroupSpec) string {
	out := strconv.Itoa(s.ReschedTimes)
	if !s.LastRescheduled.IsZero() {
		out += " (last " + age(s.LastRescheduled, d.now) + " ago)"
	}
	recent := 0
	for _, t := range s.RecentRestarts {
		if d.now.Sub(t) <= 30*time.Minute {
			recent++
		}
	}
	if recent > 0 {
		out += fmt.Sprintf(", %d in the last 30m", recent)
	}
	if s.CrashLoops > 0 {
		out += ", " + count(s.CrashLoops, "crash loop")
	}
	if s.PortRetries > 0 {
		out += ", " + count(s.PortRetries, "port retry")
	}
	return out
}

// taskGroupGPUs writes the cards each task holds: a whole card, or its share of cores
// and memory.
func (d *describer) taskGroupGPUs(gpus []v4.TaskGPU, problem string) {
	if len(gpus) == 0 {
		d.kv("GPUs", "%s", none)
	} else {
		rows := make([][]string, 0, len(gpus))
		for _, g := range gpus {
			rows = append(rows, []string{g.Task, "gpu" + strconv.Itoa(g.Index), g.UUID, gpuShare(g)})
		}
		d.section("GPUs", func() { d.table([]string{"TASK", "CARD", "UUID", "SHARE"}, rows) })
	}
	if problem != "" {
		d.kv("GPU Problem", "%s", problem)
	}
}

// gpuShare is "whole card" or "30% of the cores, 4GiB".
func gpuShare(g v4.TaskGPU) string {
	if g.Whole() {
		return "whole card"
	}
	return fmt.Sprintf("%d%% of the cores, %s", g.Cores, mib(g.MemoryMiB))
}

// taskStates writes each task's state, times, exit, health and message. Tasks restart
// with their group, so the group's Restarts are theirs.
func (d *describer) taskStates(tasks []v4.TaskStatus) {
	if len(tasks) == 0 {
		d.kv("Tasks", "%s", none)
		return
	}
	d.section("Tasks", func() {
		for _, t := range tasks {
			d.section(t.Name, func() { d.taskState(t) })
		}
	})
}

func (d *describer) taskState(t v4.TaskStatus) {
	state := orNone(t.Status)
	var extra []string
	if t.Info.Pid > 0 {
		extra = append(extra, "pid "+strconv.Itoa(t.Info.Pid))
	}
	if t.Info.ID != "" {
		extra = append(extra, "id "+shortID(t.Info.ID))
	}
	if len(extra) > 0 {
		state += " (" + strings.Join(extra, ", ") + ")"
	}
	d.kv("State", "%s", state)
	if t.Role != "" {
		d.kv("Role", "%s", t.Role)
	}
	d.when("Started", t.Info.StartAt)
	d.when("Finished", t.Info.FinishAt)
	if t.Status == v4.StatusFailed || t.Status == v4.StatusFinish || !t.Info.FinishAt.IsZero() {
		d.kv("Exit Code", "%d", t.Info.ExitCode)
	}
	if t.Info.OOMKilled {
		d.kv("Reason", "OOMKilled")
	}
	if t.Healthy != nil {
		h := map[bool]string{true: "healthy", false: "unhealthy"}[*t.Healthy]
		if t.ConsecutiveFailures > 0 {
			h += fmt.Sprintf(" (%d failures in a row)", t.ConsecutiveFailures)
		}
		if t.HealthMessage != "" {
			h += ": " + t.HealthMessage
		}
		d.kv("Health", "%s", h)
	}
	if t.Ready != nil {
		r := map[bool]string{true: "ready", false: "not ready"}[*t.Ready]
		if t.ReadyMessage != "" && !*t.Ready {
			r += ": " + t.ReadyMessage
		}
		d.kv("Readiness", "%s", r)
	}
	for _, m := range []string{t.Message, t.Info.Message} {
		if m != "" {
			d.kv("Message", "%s", m)
			break
		}
	}
}

// shortID is a Docker container ID's first 12 characters, as docker ps writes it; other
// drivers' IDs are written whole.
func shortID(id string) string {
	if len(id) == 64 && strings.Trim(id, "0123456789abcdef") == "" {
		return id[:12]
	}
	return id
}
