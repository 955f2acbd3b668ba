package v4

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

var userPattern = regexp.MustCompile(`^[a-z_][a-z0-9_.-]*\$?$|^[0-9]+$`)

func validateProcessTask(p string, t *ProcessTask, ports map[string]string, hostPorts map[int]string, errs *FieldErrors) {
	if strings.TrimSpace(t.ProcName) == "" {
		errs.add(p+".procName", "required")
	} else if strings.Contains(t.ProcName, "/") {
		errs.add(p+".procName", "must be the process name (the base name of its executable), not a path, got %q", truncate(t.ProcName, 80))
	}
	if strings.TrimSpace(t.StartCmd) == "" {
		errs.add(p+".startCmd", "required")
	}
	if t.User != "" && (len(t.User) > 32 || !userPattern.MatchString(t.User)) {
		errs.add(p+".user", "must be a user name or numeric uid, got %q", truncate(t.User, 80))
	}
	nonNegative(p+".startGracePeriod", t.StartGracePeriod, errs)
	taskPorts := map[string]bool{}
	for i := range t.Ports {
		pp := fmt.Sprintf("%s.ports[%d]", p, i)
		port := &t.Ports[i]
		validatePortCommon(pp, port, ports, errs)
		taskPorts[port.Name] = true
		if port.ContainerPort != 0 {
			errs.add(pp+".containerPort", "processes use the host network: set hostPort (0 for a random port)")
		}
		portInRange(pp+".hostPort", port.HostPort, errs)
		claimHostPort(pp, port.HostPort, hostPorts, errs)
	}
	for i, u := range t.URIs {
		up := fmt.Sprintf("%s.uris[%d]", p, i)
		validateURI(up+".value", u.Value, errs)
		oneOf(up+".pullPolicy", u.PullPolicy, errs, PullAlways, PullIfNotPresent)
		if u.Pwd != "" && u.User == "" {
			errs.add(up+".user", "required when pwd is set")
		}
	}
	validateEnv(p+".env", t.Env, errs)
	validateResources(p+".resources", t.Resources, true, errs)
	validateChecks(p+".healthChecks", t.HealthChecks, t.Ports, errs)
	validateConfigMapRefs(p+".configmaps", t.ConfigMaps, errs)
	validateSecretRefs(p+".secrets", t.Secrets, errs)
	checkProcessVariables(p, t, taskPorts, errs)
}

// validateURI accepts http, https and file URLs; ${...} variables may appear anywhere and
// are checked separately.
func validateURI(p, v string, errs *FieldErrors) {
	if v == "" {
		errs.add(p, "required")
		return
	}
	u, err := url.Parse(stripVariables(v))
	if err != nil {
		errs.add(p, "must be a URL: %v", err)
		return
	}
	switch u.Scheme {
	case "http", "https":
		if u.Host == "" {
			errs.add(p, "must name a host, got %q", truncate(v, 120))
		}
	case "file":
	default:
		errs.add(p, "must be an http://, https:// or file:// URL, got %q", truncate(v, 120))
	}
}
