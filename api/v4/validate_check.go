package v4

import (
	"fmt"
	"strings"
)

// validateChecks enforces BCS's rules: at most one local check (HTTP, TCP or COMMAND), at
// most one REMOTE_HTTP and one REMOTE_TCP, timeout shorter than interval, and a port that
// exists. Blocks for other types than the check's own are ignored, as BCS does.
func validateChecks(p string, checks []HealthCheck, ports []Port, errs *FieldErrors) {
	seen := map[string]string{}
	for i := range checks {
		h := &checks[i]
		hp := fmt.Sprintf("%s[%d]", p, i)
		oneOf(hp+".type", h.Type, errs, CheckHTTP, CheckTCP, CheckCommand, CheckRemoteHTTP, CheckRemoteTCP)
		oneOf(hp+".role", h.Role, errs, "", ProbeLiveness, ProbeReadiness, ProbeStartup)
		group := h.Type
		if group == CheckHTTP || group == CheckTCP || group == CheckCommand {
			group = "local " + h.ProbeRole()
		} else if h.Role != "" {
			errs.add(hp+".role", "only a local check (HTTP, TCP, COMMAND) has a role; %s runs on the server", h.Type)
		}
		if other, dup := seen[group]; dup && h.Type != "" {
			if strings.HasPrefix(group, "local") {
				errs.add(hp+".type", "only one of HTTP, TCP and COMMAND is allowed per task and role (%s); %s is one already", h.ProbeRole(), other)
			} else {
				errs.add(hp+".type", "only one %s check is allowed per task; %s is one already", h.Type, other)
			}
		} else {
			seen[group] = hp
		}
		for _, f := range []struct {
			name string
			v    int
		}{{"intervalSeconds", h.IntervalSeconds}, {"timeoutSeconds", h.TimeoutSeconds}, {"gracePeriodSeconds", h.GracePeriodSeconds}, {"delaySeconds", h.DelaySeconds}, {"consecutiveFailures", h.ConsecutiveFailures}} {
			nonNegative(hp+"."+f.name, f.v, errs)
		}
		if h.HTTP != nil { // checked whatever the type, so a template's placeholders show up
			oneOf(hp+".http.scheme", h.HTTP.Scheme, errs, "http", "https")
			if h.HTTP.Path != "" && h.HTTP.Path[0] != '/' {
				errs.add(hp+".http.path", "must start with '/', got %q", truncate(h.HTTP.Path, 80))
			}
		}
		switch h.Type {
		case CheckHTTP, CheckRemoteHTTP:
			if h.HTTP == nil {
				errs.add(hp+".http", "required for a %s check", h.Type)
				break
			}
			checkPortRef(hp+".http", h.HTTP.Port, h.HTTP.PortName, ports, errs)
		case CheckTCP, CheckRemoteTCP:
			if h.TCP == nil {
				errs.add(hp+".tcp", "required for a %s check", h.Type)
				break
			}
			checkPortRef(hp+".tcp", h.TCP.Port, h.TCP.PortName, ports, errs)
		case CheckCommand:
			if h.Command == nil || h.Command.Value == "" {
				errs.add(hp+".command.value", "required for a COMMAND check")
			}
		}
	}
}

// checkPortRef: port wins when > 0; otherwise portName must name one of the task's ports.
func checkPortRef(p string, port int, name string, ports []Port, errs *FieldErrors) {
	if port > 0 {
		if port > 65535 {
			errs.add(p+".port", "must be a port number 1-65535, got %d", port)
		}
		return
	}
	if port < 0 {
		errs.add(p+".port", "must not be negative, got %d", port)
	}
	if name == "" {
		errs.add(p+".portName", "required when port is 0: name one of the task's ports")
		return
	}
	names := make([]string, 0, len(ports))
	for _, pt := range ports {
		if pt.Name == name {
			return
		}
		names = append(names, pt.Name)
	}
	msg := fmt.Sprintf("port %q is not declared in the task's ports", name)
	if s := closest(name, names); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	errs.add(p+".portName", "%s", msg)
}
