package containerd

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// Runtime handlers (docs/runtimes.md, "Per-workload runtimes"): the OCI runtimes a node
// runs tasks with, by name. A pod's spec.runtime picks one by its name; the name is only
// ever a key of the operator's table, never a path, so no spec can run a binary the
// operator did not declare.

// Handler is one way to run a task.
type Handler struct {
	// Binary is the OCI runtime executable (runc, crun, or one that speaks runc's
	// command line) that containerd's runc shim runs, as its BinaryName.
	Binary string
	// Shim, when set, is a containerd runtime type (io.containerd.runsc.v1) whose own
	// shim runs the task, in place of the runc shim and Binary.
	Shim string
}

// String is the handler as the --container-runtimes flag writes it.
func (h Handler) String() string {
	if h.Shim != "" {
		return shimPrefix + h.Shim
	}
	return h.Binary
}

// shimPrefix marks a handler declared by its containerd runtime type.
const shimPrefix = "shim:"

// shimPattern is a containerd runtime type: io.containerd.<name>.v<N>, run by the shim
// binary containerd-shim-<name>-v<N>.
var shimPattern = regexp.MustCompile(`^io\.containerd\.([a-z0-9_-]+)\.(v[0-9]+)$`)

// BuiltinRuntimes are the OCI runtimes a node offers without being told, when found on
// PATH.
var BuiltinRuntimes = []string{"runc", "crun"}

// DefaultHandlers are the BuiltinRuntimes found on PATH, by name (crun on a host it
// refuses runs through a wrapper: crun_hybrid.go).
func DefaultHandlers() map[string]Handler {
	out := map[string]Handler{}
	for _, name := range BuiltinRuntimes {
		if p, err := lookPath(name); err == nil {
			out[name] = Handler{Binary: p}
		}
	}
	return out
}

// hybridControllers is where a hybrid cgroup host lists the controllers of its cgroup2
// hierarchy.
const hybridControllers = "/sys/fs/cgroup/unified/cgroup.controllers"

// CrunRefuses says why crun cannot run containers on this host as it is, or returns "":
// crun refuses a hybrid cgroup layout whose cgroup2 holds controllers ("cgroups in
// hybrid mode not supported"), as Debian's default VM layout does (hugetlb there). The
// driver then runs crun through a wrapper (crun_hybrid.go).
func CrunRefuses() string {
	b, err := os.ReadFile(hybridControllers)
	if err != nil || len(strings.TrimSpace(string(b))) == 0 {
		return ""
	}
	return "crun does not run on a hybrid cgroup v1/v2 host with controllers on cgroup2 (" + strings.TrimSpace(string(b)) + ")"
}

// ParseHandlers reads the --container-runtimes entries, NAME=BINARY or
// NAME=shim:RUNTIME_TYPE (crun=/usr/bin/crun, runsc=shim:io.containerd.runsc.v1), and
// checks that each binary exists and is executable: a bare BINARY is looked up in PATH,
// a path must be absolute. A name may be declared once.
func ParseHandlers(entries []string) (map[string]Handler, error) {
	out := map[string]Handler{}
	var errs []error
	for _, e := range entries {
		name, val, ok := strings.Cut(strings.TrimSpace(e), "=")
		if !ok || val == "" {
			errs = append(errs, fmt.Errorf("runtime %q: want NAME=BINARY or NAME=shim:RUNTIME_TYPE", e))
			continue
		}
		if err := v4.CheckRuntimeName(name); err != nil {
			errs = append(errs, fmt.Errorf("runtime %q: name %w", name, err))
			continue
		}
		if _, dup := out[name]; dup {
			errs = append(errs, fmt.Errorf("runtime %q: declared twice", name))
			continue
		}
		h, err := parseHandler(val)
		if err != nil {
			errs = append(errs, fmt.Errorf("runtime %s: %w", name, err))
			continue
		}
		out[name] = h
	}
	return out, errors.Join(errs...)
}

// parseHandler checks one handler's BINARY or shim:RUNTIME_TYPE.
func parseHandler(val string) (Handler, error) {
	if shim, ok := strings.CutPrefix(val, shimPrefix); ok {
		m := shimPattern.FindStringSubmatch(shim)
		if m == nil {
			return Handler{}, fmt.Errorf("shim %q: want a containerd runtime type, io.containerd.NAME.vN", shim)
		}
		bin := "containerd-shim-" + m[1] + "-" + m[2]
		if _, err := lookPath(bin); err != nil {
			return Handler{}, fmt.Errorf("shim %s: its binary %s is not in PATH: %w", shim, bin, err)
		}
		return Handler{Shim: shim}, nil
	}
	if strings.Contains(val, "/") && !filepath.IsAbs(val) {
		return Handler{}, fmt.Errorf("binary %q: must be an absolute path or a name found in PATH", val)
	}
	p, err := lookPath(val)
	if err != nil {
		return Handler{}, fmt.Errorf("binary %s: %w", val, err)
	}
	return Handler{Binary: p}, nil
}

// lookPath finds an executable regular file: a name in PATH, or the path itself.
func lookPath(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(p) {
		if p, err = filepath.Abs(p); err != nil {
			return "", err
		}
	}
	fi, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable file", p)
	}
	return p, nil
}

// handlers builds the driver's table: cfg.Runtimes, plus the default handler named
// after cfg.RuntimeBinary when the table lacks it. It returns the table and the
// default's name.
func handlers(cfg Config) (map[string]Handler, string, error) {
	bin := orDefault(cfg.RuntimeBinary, "runc")
	def := cfg.DefaultRuntime
	if def == "" {
		def = filepath.Base(bin)
	}
	if err := v4.CheckRuntimeName(def); err != nil {
		return nil, "", fmt.Errorf("default runtime %q: %w", def, err)
	}
	table := maps.Clone(cfg.Runtimes)
	if table == nil {
		table = map[string]Handler{}
	}
	for name, h := range table {
		if err := v4.CheckRuntimeName(name); err != nil {
			return nil, "", fmt.Errorf("runtime %q: %w", name, err)
		}
		if (h.Binary == "") == (h.Shim == "") {
			return nil, "", fmt.Errorf("runtime %s: give a binary or a shim, not both or neither", name)
		}
	}
	if _, ok := table[def]; !ok {
		if cfg.DefaultRuntime != "" && cfg.RuntimeBinary == "" {
			return nil, "", fmt.Errorf("default runtime %s: not among the runtimes", def)
		}
		table[def] = Handler{Binary: bin}
	}
	return table, def, nil
}

// Runtimes are the names of the handlers the driver runs tasks with, sorted: what the
// node reports as its v4.AttrContainerRuntimes.
func (d *Driver) Runtimes() []string {
	return slices.Sorted(maps.Keys(d.runtimes))
}

// DefaultRuntime is the handler of pods that ask for none.
func (d *Driver) DefaultRuntime() string { return d.defaultRuntime }

// handler resolves a pod's runtime (empty: the default). A name the driver does not
// have is refused, also one the scheduler let through (the node changed since).
func (d *Driver) handler(name string) (string, Handler, error) {
	if name == "" {
		name = d.defaultRuntime
	}
	h, ok := d.runtimes[name]
	if !ok {
		return "", Handler{}, fmt.Errorf("runtime %q: this node does not offer it (it offers %s)", name, strings.Join(d.Runtimes(), ", "))
	}
	return name, h, nil
}
