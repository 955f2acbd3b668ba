package v4

import (
	"regexp"
	"strconv"
	"strings"
)

// taskGroupNamePattern allows BCS task group IDs: "{index}.{app}.{namespace}.{cluster}.{unixNano}".
// Namespaces may be mixed case (defaultGroup) and cluster IDs carry '-' and '_'.
var taskGroupNamePattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)

// checkTaskGroupName reports why s is not a task group ID. The name must start with the
// instance index, so the ID and spec.index cannot disagree.
func checkTaskGroupName(path, s string, index int, errs *FieldErrors) {
	if !checkTaskGroupID(path, s, errs) {
		return
	}
	if first, _, _ := strings.Cut(s, "."); first != strconv.Itoa(index) {
		errs.add(path, "must start with the instance index %d and a '.', got %q", index, truncate(s, 80))
	}
}

// checkTaskGroupID reports why s is not a task group ID, whatever its index (a reference
// to a task group, as an agent's event makes), and whether it is one.
func checkTaskGroupID(path, s string, errs *FieldErrors) bool {
	switch {
	case s == "":
		errs.add(path, "required")
	case len(s) > maxHostNameLen:
		errs.add(path, "must be at most %d characters, got %d", maxHostNameLen, len(s))
	case !taskGroupNamePattern.MatchString(s):
		errs.add(path, "must be a task group ID {index}.{app}.{namespace}.{cluster}.{unixNano} of letters, digits, '.', '_' and '-', got %q", truncate(s, 80))
	default:
		return true
	}
	return false
}

// validateTaskGroup checks what berth writes for one instance: its owner, index and node.
func validateTaskGroup(tg *TaskGroup, errs *FieldErrors) {
	s := &tg.Spec
	switch s.Owner.Kind {
	case "":
		errs.add("spec.owner.kind", "required")
	case KindApplication, KindProcess, KindDeployment, KindDaemonset, KindDependency, KindJob:
	default:
		errs.add("spec.owner.kind", "must be application, process, deployment, daemonset, dependency or job, got %q", truncate(string(s.Owner.Kind), 80))
	}
	checkName("spec.owner.name", s.Owner.Name, errs)
	nonNegative("spec.index", s.Index, errs)
	if s.JobIndex != nil {
		nonNegative("spec.jobIndex", *s.JobIndex, errs)
	}
	if s.Node == "" {
		errs.add("spec.node", "required")
	} else {
		checkHostName("spec.node", s.Node, errs)
	}
	validateLabels("spec.labels", s.Labels, errs)
	validateNodeResources("spec.resources", &s.Resources, errs)
	for i, p := range s.Ports {
		if p.HostPort < 1 || p.HostPort > 65535 {
			errs.add(indexPath("spec.ports", i)+".hostPort", "must be a port number 1-65535, got %d", p.HostPort)
		}
	}
	validateTaskGPUs("spec.gpus", s.GPUs, errs)
	validateTaskGroupStatus(&tg.Status, errs)
}

// Bounds of what an agent may report about one task group: the status is stored with
// every change, so its size must not follow whatever a task prints.
const (
	maxStatusTasks      = 256
	maxStatusMessageLen = 4096
)

// ValidateTaskGroupStatus checks a status an agent reports, alone: the stored task group
// it lands on was validated when berth wrote it.
func ValidateTaskGroupStatus(st *TaskGroupStatus) FieldErrors {
	var errs FieldErrors
	validateTaskGroupStatus(st, &errs)
	return errs
}

// validateTaskGroupStatus checks a reported status: a known phase, a bounded number of
// tasks and bounded messages.
func validateTaskGroupStatus(st *TaskGroupStatus, errs *FieldErrors) {
	if st.Phase != "" {
		oneOf("status.phase", st.Phase, errs, StatusStaging, StatusStarting, StatusRunning, StatusFinish,
			StatusError, StatusKilling, StatusKilled, StatusFailed, StatusLost, StatusRestarting)
	}
	boundedText("status.message", st.Message, errs)
	boundedText("status.gpuProblem", st.GPUProblem, errs)
	if st.Reason != "" {
		oneOf("status.reason", st.Reason, errs, ReasonPortConflict)
	}
	validateBusyPorts("status.portsTaken", st.PortsTaken, errs)
	if len(st.Tasks) > maxStatusTasks {
		errs.add("status.tasks", "must list at most %d tasks, got %d", maxStatusTasks, len(st.Tasks))
		return
	}
	for i, t := range st.Tasks {
		if len(t.Message) <= maxStatusMessageLen && len(t.HealthMessage) <= maxStatusMessageLen {
			continue // no path to build: this runs for every status an agent reports
		}
		p := indexPath("status.tasks", i)
		boundedText(p+".message", t.Message, errs)
		boundedText(p+".healthMessage", t.HealthMessage, errs)
	}
}

// ClampStatus cuts a status's messages to the bounds validation allows, so a long error
// or health check output is stored shortened instead of refused.
func ClampStatus(st *TaskGroupStatus) {
	st.Message = clampText(st.Message)
	st.GPUProblem = clampText(st.GPUProblem)
	for i := range st.Tasks {
		st.Tasks[i].Message = clampText(st.Tasks[i].Message)
		st.Tasks[i].HealthMessage = clampText(st.Tasks[i].HealthMessage)
	}
}

func clampText(s string) string {
	if len(s) <= maxStatusMessageLen {
		return s
	}
	return strings.ToValidUTF8(s[:maxStatusMessageLen-len("…")], "") + "…"
}

func boundedText(path, s string, errs *FieldErrors) {
	if len(s) > maxStatusMessageLen {
		errs.add(path, "must be at most %d bytes, got %d", maxStatusMessageLen, len(s))
	}
}
