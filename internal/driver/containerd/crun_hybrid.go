package containerd

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/berthhq/berth/internal/atomicfile"
)

// crun on a hybrid cgroup host (docs/runtimes.md, "runc and crun"). Debian's crun 1.8
// refuses a host whose cgroup2 hierarchy, mounted at /sys/fs/cgroup/unified beside the
// v1 controllers, holds a controller ("cgroups in hybrid mode not supported"), which is
// Debian's default VM layout (hugetlb there). Without that mount crun sees a cgroup v1
// host, which it supports fully. So the driver runs such a crun through a wrapper of its
// own: a script that makes a private mount namespace for crun alone (unshare -m),
// unmounts the cgroup2 hierarchy there, and execs crun. Nothing changes for the host or
// for any other process: the containers' cgroups are the v1 ones runc makes too.

// crunWrapperName is the wrapper's file name under the driver's bin directory; one per
// crun binary, named by a hash of its path.
const crunWrapperName = "crun-cgroupv1"

// wrapHybridCrun points every handler that runs crun at a wrapper when this host needs
// one (CrunRefuses); others are kept as they are. A crun that cannot be wrapped (no
// unshare on the node) is left out of the table, since it would only fail the pods that
// pick it, and said why in the returned warnings.
func wrapHybridCrun(table map[string]Handler, binDir string) (warnings []string) {
	if CrunRefuses() == "" {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(table)) {
		h := table[name]
		if h.Shim != "" || filepath.Base(h.Binary) != "crun" {
			continue
		}
		w, err := crunWrapper(h.Binary, binDir)
		if err != nil {
			delete(table, name)
			warnings = append(warnings, fmt.Sprintf("runtime %s is not offered: %v", name, err))
			continue
		}
		table[name] = Handler{Binary: w}
	}
	return warnings
}

// crunWrapper writes (or finds up to date) the wrapper of the crun at bin and returns
// its path.
func crunWrapper(bin, binDir string) (string, error) {
	crun, err := exec.LookPath(bin)
	if err != nil {
		return "", fmt.Errorf("crun: %w", err)
	}
	if crun, err = filepath.Abs(crun); err != nil {
		return "", err
	}
	unshare, err := systemTool("unshare")
	if err != nil {
		return "", fmt.Errorf("crun on a hybrid cgroup host runs in a mount namespace of its own, which needs unshare (util-linux): %w", err)
	}
	umount, err := systemTool("umount")
	if err != nil {
		return "", fmt.Errorf("crun on a hybrid cgroup host needs umount (mount): %w", err)
	}
	// The paths travel as arguments, never inside the inner command, so that no quoting
	// of theirs can change what the inner shell runs.
	script := fmt.Sprintf(`#!/bin/sh
# Written by berth's containerd driver: crun in a mount namespace of its own without
# the hybrid host's cgroup2 mount, so that it sees a cgroup v1 host (docs/runtimes.md).
exec %s -m --propagation private /bin/sh -c 'u="$1"; c="$2"; shift 2; "$u" %s 2>/dev/null; exec "$c" "$@"' sh %s %s "$@"
`, shellQuote(unshare), hybridCgroup2, shellQuote(umount), shellQuote(crun))
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return "", fmt.Errorf("crun wrapper: %w", err)
	}
	path := filepath.Join(binDir, crunWrapperName+"-"+shortHash(crun))
	if cur, err := os.ReadFile(path); err == nil && string(cur) == script {
		return path, nil
	}
	if err := atomicfile.Write(path, []byte(script), 0o755); err != nil {
		return "", fmt.Errorf("crun wrapper: %w", err)
	}
	return path, nil
}

// systemTool finds one of the system's tools in PATH, else where Debian puts it: the
// agent may run with a PATH of its operator's that lacks /usr/bin.
func systemTool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/bin", "/bin", "/usr/sbin", "/sbin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not in PATH, /usr/bin or /bin", name)
}

// hybridCgroup2 is where a hybrid host mounts its cgroup2 hierarchy.
const hybridCgroup2 = "/sys/fs/cgroup/unified"

// shellQuote quotes s for sh as one word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shortHash names a file after s.
func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:6])
}
