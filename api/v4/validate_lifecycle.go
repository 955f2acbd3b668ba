package v4

import (
	"fmt"
	"slices"
	"strings"
)

// maxHookCommand bounds a hook's command, as the agent keeps and runs it.
const maxHookCommand = 16 << 10

// validateLifecycle checks a task's lifecycle (docs/pods.md): a role and hooks that the
// task can run. checks are the task's health checks; ports its ports, and process tells
// which of their numbers a hook's port must be (the host port of a process, the
// container port of a container).
func validateLifecycle(p string, l *Lifecycle, checks []HealthCheck, ports []Port, process bool, errs *FieldErrors) {
	if l == nil {
		return
	}
	lp := p + ".lifecycle"
	if l.Init {
		if l.Sidecar {
			errs.add(lp+".sidecar", "an init task runs to its end before the main tasks: it cannot also be a sidecar")
		}
		if l.PostStart != nil {
			errs.add(lp+".postStart", "an init task runs to its end: it takes no hooks")
		}
		if l.PreStop != nil {
			errs.add(lp+".preStop", "an init task runs to its end: it takes no hooks")
		}
		if slices.ContainsFunc(checks, localCheck) {
			errs.add(p+".healthChecks", "an init task runs to its end: it takes no local health checks")
		}
	}
	validateHook(lp+".postStart", l.PostStart, ports, process, errs)
	validateHook(lp+".preStop", l.PreStop, ports, process, errs)
}

// validateHook checks one hook: exactly one action, a command that is not empty, and an
// HTTP GET to one of the task's own ports (a hook never reaches anything else on the
// node).
func validateHook(p string, h *Hook, ports []Port, process bool, errs *FieldErrors) {
	if h == nil {
		return
	}
	switch {
	case h.Exec == nil && h.HTTPGet == nil:
		errs.add(p, "needs exec or httpGet")
	case h.Exec != nil && h.HTTPGet != nil:
		errs.add(p+".httpGet", "a hook is exec or httpGet, not both")
	}
	if h.TimeoutSeconds < 0 || h.TimeoutSeconds > MaxHookTimeout {
		errs.add(p+".timeoutSeconds", "must be 0 (the default, %d) to %d, got %d", DefaultHookTimeout, MaxHookTimeout, h.TimeoutSeconds)
	}
	if e := h.Exec; e != nil {
		switch {
		case strings.TrimSpace(e.Command) == "":
			errs.add(p+".exec.command", "required")
		case len(e.Command) > maxHookCommand:
			errs.add(p+".exec.command", "must be at most %d bytes, got %d", maxHookCommand, len(e.Command))
		case strings.ContainsRune(e.Command, 0):
			errs.add(p+".exec.command", "must not contain NUL")
		}
	}
	if g := h.HTTPGet; g != nil {
		if g.Scheme != "" { // http by default
			oneOf(p+".httpGet.scheme", g.Scheme, errs, "http", "https")
		}
		if g.Path != "" && g.Path[0] != '/' {
			errs.add(p+".httpGet.path", "must start with '/', got %q", truncate(g.Path, 80))
		}
		hookPort(p+".httpGet", g, ports, process, errs)
	}
}

// hookPort requires an HTTP hook's port to be one of the task's: by name, or by the
// number the hook reaches it at (a process's fixed host port, a container's port).
func hookPort(p string, g *HTTPCheck, ports []Port, process bool, errs *FieldErrors) {
	if g.Port == 0 {
		checkPortRef(p, 0, g.PortName, ports, errs)
		return
	}
	own := slices.ContainsFunc(ports, func(pt Port) bool {
		if process {
			return pt.HostPort > 0 && pt.HostPort == g.Port
		}
		return pt.ContainerPort > 0 && pt.ContainerPort == g.Port
	})
	if !own {
		errs.add(p+".port", "%d is not one of the task's ports: a hook reaches only its own task (name the port with portName)", g.Port)
	}
}

// validatePodLifecycle checks the pod's roles together: a pod needs a main task, and no
// container may take the network holder's name.
func validatePodLifecycle(path string, p *PodSpec, errs *FieldErrors) {
	lcs := TaskLifecycles(p)
	if len(lcs) > 0 && !slices.ContainsFunc(lcs, func(l *Lifecycle) bool { return l.Role() == "" }) {
		field := path + ".containers"
		if len(p.Processes) > 0 {
			field = path + ".processes"
		}
		errs.add(field, "needs at least one main task (neither init nor sidecar)")
	}
	for i := range p.Containers {
		if p.Containers[i].Name == NetworkHolderTask {
			errs.add(fmt.Sprintf("%s.containers[%d].name", path, i), "%q is the name of the task that holds the pod's network", NetworkHolderTask)
		}
	}
}
