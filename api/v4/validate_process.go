package v4

import (
	"fmt"
	"net/url"
	"path"
	"reflect"
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
	// The agent runs as root: a path of the spec is resolved in the pod's directories or
	// a host volume of the node, and ".." is how a path leaves them (${work_base_dir}/..);
	// it is never needed (docs/security.md, "Paths").
	processPath(p+".workPath", t.WorkPath, errs)
	processPath(p+".pidFile", t.PidFile, errs)
	nonNegative(p+".startGracePeriod", t.StartGracePeriod, errs)
	taskPorts := map[string]bool{}
	noHostPort := map[string]string{} // port name -> path, for hostPort -1
	for i := range t.Ports {
		pp := fmt.Sprintf("%s.ports[%d]", p, i)
		port := &t.Ports[i]
		validatePortCommon(pp, port, ports, errs)
		taskPorts[port.Name] = true
		if port.ContainerPort != 0 {
			errs.add(pp+".containerPort", "processes use the host network: set hostPort (0 for a random port, -1 for none)")
		}
		portInRange(pp+".hostPort", port.HostPort, errs)
		claimHostPort(pp, port.HostPort, hostPorts, errs)
		if port.HostPort == -1 && port.Name != "" {
			noHostPort[port.Name] = pp
		}
	}
	for i, u := range t.URIs {
		up := fmt.Sprintf("%s.uris[%d]", p, i)
		validateURI(up+".value", u.Value, errs)
		processPath(up+".outputDir", u.OutputDir, errs)
		oneOf(up+".pullPolicy", u.PullPolicy, errs, PullAlways, PullIfNotPresent)
		if u.Pwd != "" && u.User == "" {
			errs.add(up+".user", "required when pwd is set")
		}
	}
	validateProcessVolumes(p, t.Volumes, errs)
	validateEnv(p+".env", t.Env, errs)
	validateResources(p+".resources", t.Resources, true, errs)
	validateChecks(p+".healthChecks", t.HealthChecks, t.Ports, errs)
	validateLifecycle(p, t.Lifecycle, t.HealthChecks, t.Ports, true, errs)
	validateConfigMapRefs(p+".configmaps", t.ConfigMaps, errs)
	validateSecretRefs(p+".secrets", t.Secrets, errs)
	checkProcessVariables(p, t, taskPorts, errs)
	checkNoHostPortRefs(p, t, noHostPort, errs)
}

// checkNoHostPortRefs reports uses of a port whose hostPort is -1: it takes no host port
// (docs/spec.md "Ports"), so it has no number for ${ports.<name>} and nothing a health
// check could probe, and the task would fail to start or never pass its check.
func checkNoHostPortRefs(p string, t *ProcessTask, noHost map[string]string, errs *FieldErrors) {
	if len(noHost) == 0 {
		return
	}
	eachString(p, reflect.ValueOf(t).Elem(), func(fp, s string) {
		refs, _ := scanVariables(s) // a scan error is checkProcessVariables' to report
		for _, r := range refs {
			if name, ok := strings.CutPrefix(r.name, varPortsPrefix); ok && noHost[name] != "" {
				errs.add(fp, "${%s}: port %q has no host port (%s.hostPort is -1)", r.name, name, noHost[name])
			}
		}
	})
	for i, h := range t.HealthChecks {
		hp := fmt.Sprintf("%s.healthChecks[%d]", p, i)
		var port int
		var name string
		switch {
		case (h.Type == CheckHTTP || h.Type == CheckRemoteHTTP) && h.HTTP != nil:
			hp, port, name = hp+".http", h.HTTP.Port, h.HTTP.PortName
		case (h.Type == CheckTCP || h.Type == CheckRemoteTCP) && h.TCP != nil:
			hp, port, name = hp+".tcp", h.TCP.Port, h.TCP.PortName
		default:
			continue
		}
		if port <= 0 && noHost[name] != "" {
			errs.add(hp+".portName", "port %q has no host port to check (%s.hostPort is -1)", name, noHost[name])
		}
	}
}

// maxProcessVolumes bounds a process's volumes (each a link the agent makes).
const maxProcessVolumes = 64

// validateProcessVolumes checks a process's volumes: each mounts a pod volume (a process
// takes no host path and no instance volume) at a path of its work directory, where the
// agent, root, places a link to the volume: relative, clean, without '..', and once.
func validateProcessVolumes(p string, vols []Volume, errs *FieldErrors) {
	if len(vols) > maxProcessVolumes {
		errs.add(p+".volumes", "a process has at most %d volumes, got %d", maxProcessVolumes, len(vols))
		return
	}
	seen := map[string]bool{}
	for i, v := range vols {
		vp := fmt.Sprintf("%s.volumes[%d].volume", p, i)
		mp := v.Volume.MountPath
		switch {
		case mp == "":
			errs.add(vp+".mountPath", "required: a path relative to the work directory")
		case len(mp) > MaxMountPathLen:
			errs.add(vp+".mountPath", "must be at most %d bytes, got %d", MaxMountPathLen, len(mp))
		case strings.IndexByte(mp, 0) >= 0:
			errs.add(vp+".mountPath", "must not contain a NUL byte")
		case path.IsAbs(mp):
			errs.add(vp+".mountPath", "must be relative to the process's work directory, got %q", truncate(mp, 80))
		case HasDotDot(mp):
			errs.add(vp+".mountPath", "must not contain a '..' segment, got %q", truncate(mp, 80))
		case path.Clean(mp) != mp || mp == ".":
			errs.add(vp+".mountPath", "must be a clean path below the work directory (no '.' segment, '//' or trailing '/'), got %q", truncate(mp, 80))
		case seen[mp]:
			errs.add(vp+".mountPath", "%q is mounted twice", truncate(mp, 80))
		}
		seen[mp] = true
		if v.Volume.PodVolume == "" {
			errs.add(vp+".podVolume", "required: a process mounts only the pod's volumes")
		}
	}
}

// processPath checks a path of a process spec: no ".." segment, no NUL byte.
func processPath(p, v string, errs *FieldErrors) {
	switch {
	case HasDotDot(v):
		errs.add(p, "must not contain '..' segments, got %q", truncate(v, 80))
	case strings.IndexByte(v, 0) >= 0:
		errs.add(p, "must not contain a NUL byte")
	}
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
		if HasDotDot(u.Path) {
			errs.add(p, "must not contain '..' segments, got %q", truncate(v, 120))
		}
	default:
		errs.add(p, "must be an http://, https:// or file:// URL, got %q", truncate(v, 120))
	}
}
