package agent

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/driver/process"
)

// The node's own guard (docs/agent.md, "Workload privilege"): the server admits a
// privileged workload only when a policy of its writer allows it, and the agent runs it
// only when its operator allows it too, as a Nomad client's plugin config does. A task
// group the node refuses fails at start, its message naming the field and the flag.

// guard is what the agent's operator allows workloads on this node.
type guard struct {
	// privileged allows every privilege but host paths: privileged containers, host
	// namespaces, capabilities, devices, unconfined and other security profiles,
	// sysctls, cgroup parents, log drivers, OOM scores, ulimits above the agent's own,
	// other docker parameters, root processes.
	privileged bool
	// seccomp are the seccomp profiles of --security-profiles, their content by name:
	// the only ones a workload may name, privileged or not (guard_params.go).
	seccomp map[string]string
	// limits reads the node's own resource limits (nil: unix.Getrlimit; tests give theirs).
	limits func(resource int) (unix.Rlimit, error)
	// volumes are the host directories workloads may use; a path is allowed when it is
	// one of them or below one.
	volumes []hostVolume
	// users are the node accounts processes may run as (userguard.go).
	users userPolicy
	// flexVolumes is whether the node runs FlexVolume drivers (--volume-plugin-dir):
	// the operator who installed one there lets workloads use it, privileged or not.
	flexVolumes bool
	// protected are directories no workload path may reach, even below a host volume:
	// the agent's data dir (its key, its checkpoint, the pods), a server's on the node,
	// /proc and /sys.
	protected []string
}

// protectedPaths are cfg's protected directories with the data dir, /proc and /sys.
func protectedPaths(cfg Config) []string {
	out := []string{"/proc", "/sys"}
	for _, p := range append([]string{cfg.DataDir}, cfg.ProtectedPaths...) {
		if p == "" {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			out = append(out, abs)
		}
	}
	return out
}

// hostVolume is one entry of --host-volumes: DIR, or DIR:ro for read-only mounts only.
type hostVolume struct {
	dir      string
	readOnly bool
}

// parseHostVolumes checks --host-volumes entries: absolute directories, each optionally
// followed by ":ro".
func parseHostVolumes(entries []string) ([]hostVolume, error) {
	var out []hostVolume
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		dir, ro := strings.CutSuffix(e, ":ro")
		if !filepath.IsAbs(dir) {
			return nil, fmt.Errorf("host volume %q: must be an absolute directory, optionally with :ro", e)
		}
		out = append(out, hostVolume{dir: filepath.Clean(dir), readOnly: ro})
	}
	return out, nil
}

// admit returns why the node refuses tg, or nil. Every refusal names its field.
func (g guard) admit(tg *v4.TaskGroup) error {
	spec := &tg.Spec.Template.Spec
	var errs []error
	for _, need := range acl.Needs("spec.template.spec", spec) {
		switch {
		case need.Privilege == acl.PrivHostPath:
			if err := g.allowPath(need); err != nil {
				errs = append(errs, err)
			}
		case need.Privilege == acl.PrivFlexVolume:
			if !g.flexVolumes {
				errs = append(errs, fmt.Errorf("%s: this node runs no FlexVolume drivers (its agent runs with an empty --volume-plugin-dir)", need.Field))
			}
		case need.Privilege == acl.PrivCSIPlugin:
			if !g.privileged {
				errs = append(errs, fmt.Errorf("%s: this node runs no CSI plugin workloads (its agent runs without --allow-privileged): a plugin gets the agent's data dir, every pod's volumes", need.Field))
			}
		case need.Param == "ulimit":
			// Judged against the node's own limits rather than admission's table, below.
		case !g.privileged:
			errs = append(errs, fmt.Errorf("%s: this node does not run workloads that need %q (its agent runs without --allow-privileged)",
				need.Field, need.Privilege))
		}
	}
	errs = append(errs, g.admitParams(spec)...)
	errs = append(errs, g.users.checkSpec(spec)...)
	if len(errs) > 0 {
		return fmt.Errorf("refused by node policy: %w", errors.Join(errs...))
	}
	return nil
}

// allowPath checks a host path against the allow-list. The path is cleaned first, so
// ".." cannot climb out of an allowed directory, and its existing part is resolved, so a
// symlink inside an allowed directory cannot point the mount elsewhere.
func (g guard) allowPath(need acl.Need) error {
	p := process.ResolveExisting(filepath.Clean(need.Path))
	for _, dir := range g.protected {
		if within(p, dir) || within(dir, p) {
			return fmt.Errorf("%s: %s reaches %s, which no workload may use on this node", need.Field, need.Path, dir)
		}
	}
	for _, v := range g.volumes {
		if !within(p, v.dir) {
			continue
		}
		if v.readOnly && !need.ReadOnly {
			return fmt.Errorf("%s: %s is allowed read-only on this node (--host-volumes %s:ro); mount it readOnly", need.Field, need.Path, v.dir)
		}
		return nil
	}
	allowed := "none"
	if len(g.volumes) > 0 {
		var dirs []string
		for _, v := range g.volumes {
			dirs = append(dirs, v.dir)
		}
		allowed = strings.Join(dirs, ",")
	}
	return fmt.Errorf("%s: %s is not among this node's host volumes (its agent's --host-volumes: %s)", need.Field, need.Path, allowed)
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	if dir == "/" || p == dir {
		return true
	}
	return strings.HasPrefix(p, dir+"/")
}
