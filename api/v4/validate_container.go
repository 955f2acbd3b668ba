package v4

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

var (
	portNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	envNamePattern  = regexp.MustCompile(`^[^=\x00]+$`)
	hostnamePattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$`)
)

func validateContainer(p string, c *Container, mode string, ports map[string]string, hostPorts map[int]string, errs *FieldErrors) {
	if strings.TrimSpace(c.Image) == "" {
		errs.add(p+".image", "required")
	}
	if c.Type != "" {
		oneOf(p+".type", c.Type, errs, "DOCKER", "MESOS")
	}
	oneOf(p+".imagePullPolicy", c.ImagePullPolicy, errs, PullAlways, PullIfNotPresent, PullNever)
	validatePullSecrets(p+".imagePullSecrets", c.ImagePullSecrets, errs)
	if c.Hostname != "" {
		checkHostname(p+".hostname", c.Hostname, errs)
	}
	for i, a := range c.Parameters {
		validateParameter(fmt.Sprintf("%s.parameters[%d]", p, i), a, errs)
	}
	for i := range c.Ports {
		pp := fmt.Sprintf("%s.ports[%d]", p, i)
		port := &c.Ports[i]
		validatePortCommon(pp, port, ports, errs)
		portInRange(pp+".containerPort", port.ContainerPort, errs)
		portInRange(pp+".hostPort", port.HostPort, errs)
		fixed := port.HostPort
		if mode == "HOST" {
			fixed = port.ContainerPort
		}
		claimHostPort(pp, fixed, hostPorts, errs)
	}
	validateEnv(p+".env", c.Env, errs)
	checkContainerVariables(p, c, errs)
	validateResources(p+".resources", c.Resources, false, errs)
	validateDockerMemory(p+".resources.limits.memory", c.Resources, errs)
	validateVolumes(p, c.Volumes, errs)
	validateChecks(p+".healthChecks", c.HealthChecks, c.Ports, errs)
	validateLifecycle(p, c.Lifecycle, c.HealthChecks, c.Ports, false, errs)
	validateConfigMapRefs(p+".configmaps", c.ConfigMaps, errs)
	validateSecretRefs(p+".secrets", c.Secrets, errs)
}

// validateVolumes checks a container's volumes: each mount path absolute and once, a
// host path absolute, and an instance volume's mount path clean (it names the volume's
// directory on the node), without host path, at most MaxInstanceVolumes of them.
func validateVolumes(p string, vols []Volume, errs *FieldErrors) {
	seen := map[string]bool{}
	instances := 0
	for i, v := range vols {
		vp := fmt.Sprintf("%s.volumes[%d].volume", p, i)
		mp := v.Volume.MountPath
		switch {
		case mp == "":
			errs.add(vp+".mountPath", "required")
		case len(mp) > MaxMountPathLen:
			errs.add(vp+".mountPath", "must be at most %d bytes, got %d", MaxMountPathLen, len(mp))
		case !path.IsAbs(mp):
			errs.add(vp+".mountPath", "must be an absolute path, got %q", truncate(mp, 80))
		case strings.IndexByte(mp, 0) >= 0:
			errs.add(vp+".mountPath", "must not contain a NUL byte")
		case seen[path.Clean(mp)]:
			errs.add(vp+".mountPath", "%q is mounted twice", truncate(mp, 80))
		case v.Volume.Instance:
			checkInstanceMountPath(vp+".mountPath", mp, errs)
		}
		seen[path.Clean(mp)] = true
		if v.Volume.HostPath != "" && !path.IsAbs(v.Volume.HostPath) && !strings.HasPrefix(v.Volume.HostPath, "$") {
			errs.add(vp+".hostPath", "must be an absolute path, got %q", truncate(v.Volume.HostPath, 80))
		}
		if !v.Volume.Instance {
			continue
		}
		if v.Volume.HostPath != "" {
			errs.add(vp+".hostPath", "must be empty in an instance volume: the node's agent picks the directory (docs/spec.md, \"Volumes\")")
		}
		if instances++; instances == MaxInstanceVolumes+1 {
			errs.add(vp+".instance", "a container has at most %d instance volumes", MaxInstanceVolumes)
		}
	}
}

// checkInstanceMountPath refuses an instance volume's mount path that is not clean: it
// names the volume's directory on the node, so one spelling per path ("/logs" and
// "/logs/" are one directory), no "." or ".." segment, and not the container's root.
func checkInstanceMountPath(p, mp string, errs *FieldErrors) {
	switch {
	case slices.Contains(strings.Split(mp, "/"), ".."):
		errs.add(p, "must not contain a '..' segment, got %q", truncate(mp, 80))
	case path.Clean(mp) != mp:
		errs.add(p, "must be a clean path (no '.' segment, '//' or trailing '/'): %q, not %q", path.Clean(mp), truncate(mp, 80))
	case mp == "/":
		errs.add(p, "must not be the container's root")
	}
}

// validatePortCommon checks what container and process ports share: a unique name (it
// becomes PORT_<name> and ${ports.<name>}) and a protocol.
func validatePortCommon(pp string, port *Port, names map[string]string, errs *FieldErrors) {
	switch {
	case port.Name == "":
		errs.add(pp+".name", "required")
	case !portNamePattern.MatchString(port.Name):
		errs.add(pp+".name", "must be letters, digits, '_' or '-', got %q", truncate(port.Name, 80))
	case names[port.Name] != "":
		errs.add(pp+".name", "must be unique in the pod: %q is also %s", port.Name, names[port.Name])
	default:
		names[port.Name] = pp
	}
	oneOf(pp+".protocol", port.Protocol, errs, "tcp", "udp", "http", "https")
}

// claimHostPort reports a fixed host port used twice in one pod (they share a network).
func claimHostPort(pp string, port int, used map[int]string, errs *FieldErrors) {
	if port <= 0 {
		return
	}
	if other, dup := used[port]; dup {
		errs.add(pp, "host port %d is already used by %s", port, other)
		return
	}
	used[port] = pp
}

func checkHostname(p, h string, errs *FieldErrors) {
	if len(h) > 63 || !hostnamePattern.MatchString(h) {
		errs.add(p, "must be a valid host name (letters, digits, '-', at most 63), got %q", truncate(h, 80))
	}
}

// dockerParameters are the docker run options berth passes through (docs/docker.md,
// Start), with a check of their value.
var dockerParameters = map[string]func(string) error{
	"net":                nonEmpty,
	"P":                  boolValue,
	"oom-kill-disable":   boolValue,
	"rm":                 boolValue,
	"ulimit":             ulimitValue,
	"shm-size":           positiveNumber,
	"ipc":                nonEmpty,
	"ip":                 nonEmpty,
	"memory-swap":        nonEmpty,
	"memory-swappiness":  intRange(0, 100),
	"cpuset-cpus":        nonEmpty,
	"cpuset":             boolValue, // true: bind ceil(requests.cpu) CPUs, NUMA-aware (internal/driver/docker/cpuset.go)
	"cpuset-mems":        nonEmpty,
	"device-read-bps":    deviceLimit,
	"device-write-bps":   deviceLimit,
	"device-read-iops":   deviceLimit,
	"device-write-iops":  deviceLimit,
	"pids-limit":         intRange(-1, 1<<22),
	"cap-add":            nonEmpty,
	"cap-drop":           nonEmpty,
	"dns":                nonEmpty,
	"add-host":           nonEmpty,
	"user":               nonEmpty,
	"label":              nonEmpty,
	"log-driver":         nonEmpty,
	"log-opt":            nonEmpty,
	"security-opt":       securityOptValue,
	"sysctl":             nonEmpty,
	"tmpfs":              nonEmpty,
	"device":             nonEmpty,
	"init":               boolValue,
	"read-only":          boolValue,
	"stop-signal":        nonEmpty,
	"blkio-weight":       intRange(10, 1000),
	"cpu-rt-runtime":     positiveNumber,
	"memory-reservation": nonEmpty,
	"oom-score-adj":      intRange(-1000, 1000),
	"mac-address":        nonEmpty,
	"group-add":          nonEmpty,
	"cgroup-parent":      nonEmpty,
	"uts":                nonEmpty,
	"pid":                nonEmpty,
	"userns":             nonEmpty,
	"cgroupns":           nonEmpty,
}

func validateParameter(p string, a Parameter, errs *FieldErrors) {
	check, ok := dockerParameters[a.Key]
	if !ok {
		known := make([]string, 0, len(dockerParameters))
		for k := range dockerParameters {
			known = append(known, k)
		}
		msg := fmt.Sprintf("unknown docker parameter %q", truncate(a.Key, 80))
		if s := closest(a.Key, known); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		errs.add(p+".key", "%s", msg)
		return
	}
	if err := check(a.Value); err != nil {
		errs.add(p+".value", "parameter %s: %v", a.Key, err)
	}
}

func nonEmpty(v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("value required")
	}
	return nil
}

func boolValue(v string) error {
	if _, err := strconv.ParseBool(v); err != nil {
		return fmt.Errorf("must be true or false, got %q", truncate(v, 40))
	}
	return nil
}

func positiveNumber(v string) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 {
		return fmt.Errorf("must be a positive number, got %q", truncate(v, 40))
	}
	return nil
}

func intRange(lo, hi int) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("must be an integer from %d to %d, got %q", lo, hi, truncate(v, 40))
		}
		return nil
	}
}

// ulimitValue accepts name=N or name=soft:hard, as docker run --ulimit.
func ulimitValue(v string) error {
	name, limits, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("must be name=limit or name=soft:hard, got %q", truncate(v, 40))
	}
	for _, part := range strings.SplitN(limits, ":", 2) {
		if _, err := strconv.ParseInt(part, 10, 64); err != nil {
			return fmt.Errorf("limit %q of %s is not an integer", truncate(part, 40), name)
		}
	}
	return nil
}

// seccompProfileName is the form of a node's seccomp profile's name (internal/acl's
// ValidProfileName takes the same).
var seccompProfileName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// securityOptValue accepts what dockerd takes; a seccomp profile is unconfined, the
// runtime's (builtin, default) or a name the node's agent resolves from its operator's
// list (--security-profiles), never an inline profile or a path (docs/security.md,
// "Workload privilege"): dockerd reads no path, and an inline profile is the tenant's
// own filter.
func securityOptValue(v string) error {
	if err := nonEmpty(v); err != nil {
		return err
	}
	v = strings.TrimSpace(v)
	k, val, ok := strings.Cut(v, "=")
	if !ok {
		k, val, _ = strings.Cut(v, ":")
	}
	if k == "seccomp" && !seccompProfileName.MatchString(val) {
		return fmt.Errorf("seccomp takes unconfined, builtin, default or the name of a profile the node's agent lists (--security-profiles), not an inline profile or a path; got %q", truncate(val, 40))
	}
	return nil
}

// deviceLimit accepts /dev/path:limit, as docker run --device-read-bps and friends.
func deviceLimit(v string) error {
	dev, limit, ok := strings.Cut(v, ":")
	if !ok || !strings.HasPrefix(dev, "/") || limit == "" {
		return fmt.Errorf("must be /dev/path:limit, got %q", truncate(v, 40))
	}
	return nil
}

func validateEnv(p string, env []EnvVar, errs *FieldErrors) {
	seen := map[string]bool{}
	for i, e := range env {
		ep := fmt.Sprintf("%s[%d]", p, i)
		switch {
		case e.Name == "":
			errs.add(ep+".name", "required")
		case !envNamePattern.MatchString(e.Name):
			errs.add(ep+".name", "must not contain '=' or NUL, got %q", truncate(e.Name, 80))
		case seen[e.Name]:
			errs.add(ep+".name", "%q is set twice", e.Name)
		}
		seen[e.Name] = true
		if i := strings.IndexByte(e.Value, 0); i >= 0 {
			// The kernel takes the environment as C strings: a NUL would end the value
			// there, or the start fails (docs/spec.md, "Env").
			errs.add(ep+".value", "must not contain a NUL byte (at byte %d)", i)
		}
		if e.ValueFrom != nil {
			if e.Value != "" {
				errs.add(ep, "value and valueFrom cannot both be set")
			}
			if e.ValueFrom.ResourceFieldRef == nil {
				errs.add(ep+".valueFrom.resourceFieldRef", "required")
			} else {
				oneOf(ep+".valueFrom.resourceFieldRef.resource", e.ValueFrom.ResourceFieldRef.Resource, errs,
					"requests.cpu", "limits.cpu", "requests.memory", "limits.memory")
			}
		}
	}
}

// MinDockerMemoryMiB is the smallest memory limit Docker starts a container with
// (6 MiB; it refuses less when the container starts, long after the apply).
const MinDockerMemoryMiB = 6

// validateDockerMemory refuses a container memory limit Docker would refuse at start.
// Memory is in MiB (BCS's "16"); 0 or none is no limit. Processes run in berth's own
// cgroups, without this minimum.
func validateDockerMemory(path string, r *Resources, errs *FieldErrors) {
	if r == nil || r.Limits == nil || r.Limits.Memory == "" {
		return
	}
	m, err := strconv.ParseFloat(strings.TrimSpace(string(r.Limits.Memory)), 64)
	if err != nil || m <= 0 || m >= MinDockerMemoryMiB {
		return // not a number or negative: validateResources says so; 0 is no limit
	}
	errs.add(path, "must be at least %d MiB (Docker's minimum; the value is in MiB), got %q", MinDockerMemoryMiB, r.Limits.Memory)
}

func validateResources(p string, r *Resources, allowUnlimited bool, errs *FieldErrors) {
	if r == nil {
		return
	}
	req := quantities(p+".requests", r.Requests, false, errs)
	lim := quantities(p+".limits", r.Limits, allowUnlimited, errs)
	for _, k := range []string{"cpu", "memory", "storage"} {
		rq, ok1 := req[k]
		lm, ok2 := lim[k]
		if ok1 && ok2 && lm >= 0 && rq > lm {
			errs.add(p+".requests."+k, "request %g exceeds limit %g", rq, lm)
		}
	}
	for i, e := range r.ExtendedResources {
		ep := fmt.Sprintf("%s.extendedResources[%d]", p, i)
		if e.Name == "" {
			errs.add(ep+".name", "required")
		}
		if e.Value <= 0 {
			errs.add(ep+".value", "must be greater than 0, got %g", e.Value)
		}
	}
	validateGPU(p, r, errs)
}

// quantities parses a resource list; "-1" (unlimited) is allowed only where noted.
func quantities(p string, l *ResourceList, allowUnlimited bool, errs *FieldErrors) map[string]float64 {
	out := map[string]float64{}
	if l == nil {
		return out
	}
	for _, q := range []struct {
		name string
		v    Quantity
	}{{"cpu", l.CPU}, {"memory", l.Memory}, {"storage", l.Storage}} {
		if q.v == "" {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(string(q.v)), 64)
		switch {
		case err != nil || f != f || f > 1e12:
			errs.add(p+"."+q.name, "must be a number, got %q", truncate(string(q.v), 40))
		case f == -1 && allowUnlimited:
			out[q.name] = -1
		case f < 0:
			if allowUnlimited {
				errs.add(p+"."+q.name, "must not be negative (-1 means unlimited), got %q", q.v)
			} else {
				errs.add(p+"."+q.name, "must not be negative, got %q", q.v)
			}
		default:
			out[q.name] = f
		}
	}
	return out
}
