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
	switch {
	case s == "":
		errs.add(path, "required")
	case len(s) > maxHostNameLen:
		errs.add(path, "must be at most %d characters, got %d", maxHostNameLen, len(s))
	case !taskGroupNamePattern.MatchString(s):
		errs.add(path, "must be a task group ID {index}.{app}.{namespace}.{cluster}.{unixNano} of letters, digits, '.', '_' and '-', got %q", truncate(s, 80))
	default:
		first, _, _ := strings.Cut(s, ".")
		if first != strconv.Itoa(index) {
			errs.add(path, "must start with the instance index %d and a '.', got %q", index, truncate(s, 80))
		}
	}
}

// validateTaskGroup checks what berth writes for one instance: its owner, index and node.
func validateTaskGroup(tg *TaskGroup, errs *FieldErrors) {
	s := &tg.Spec
	switch s.Owner.Kind {
	case "":
		errs.add("spec.owner.kind", "required")
	case KindApplication, KindProcess, KindDeployment, KindDaemonset, KindDependency:
	default:
		errs.add("spec.owner.kind", "must be application, process, deployment, daemonset or dependency, got %q", truncate(string(s.Owner.Kind), 80))
	}
	checkName("spec.owner.name", s.Owner.Name, errs)
	nonNegative("spec.index", s.Index, errs)
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
}
