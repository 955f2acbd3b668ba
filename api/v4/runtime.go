package v4

import (
	"fmt"
	"regexp"
)

// Per-workload container runtimes (docs/runtimes.md): a pod's runtime names one of the
// OCI runtime handlers its node offers (Kubernetes' runtimeClassName), never a path.

// AttrContainerRuntimes is the node's set attribute of the runtime handlers it offers
// (runc, crun, runsc, ...): the scheduler places a pod asking for a runtime only on a
// node whose set holds it, and constraints can match it like any set attribute.
const AttrContainerRuntimes = "container.runtimes"

// MaxRuntimeName bounds a runtime handler's name.
const MaxRuntimeName = 63

// runtimePattern is a handler name: lowercase letters and digits, with '.', '_' or '-'
// inside (Docker names its runtimes "io.containerd.runc.v2" and the like). No '/', so a
// name is never a path, and no leading '.', so never "." or "..".
var runtimePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$`)

// CheckRuntimeName says why name cannot name a runtime handler, or returns nil. The
// agent holds the handlers it declares to it too, so every name a node reports is one a
// spec can ask for.
func CheckRuntimeName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("must not be empty")
	case len(name) > MaxRuntimeName:
		return fmt.Errorf("must be at most %d characters, got %d", MaxRuntimeName, len(name))
	case !runtimePattern.MatchString(name):
		return fmt.Errorf("must be a runtime handler's name (lowercase letters, digits, and '.', '_' or '-' inside, such as runc, crun or runsc), not a path, got %q", truncate(name, 80))
	}
	return nil
}

// validatePodRuntime checks spec.runtime: a handler name, for containers only.
func validatePodRuntime(path string, p *PodSpec, errs *FieldErrors) {
	if p.Runtime == "" {
		return
	}
	if err := CheckRuntimeName(p.Runtime); err != nil {
		errs.add(path+".runtime", "%v", err)
		return
	}
	if len(p.Processes) > 0 {
		errs.add(path+".runtime", "processes run on the host, not in a container runtime: remove runtime %q (it is for containers)", p.Runtime)
	}
}
