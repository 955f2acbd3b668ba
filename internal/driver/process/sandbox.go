package process

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	v4 "github.com/berthhq/berth/api/v4"
)

// Every path of a process spec is the tenant's (docs/security.md, "Paths"): workPath,
// pidFile, a package's outputDir, configmap and secret files, file:// packages. The agent
// runs as root, so it resolves each inside the task's sandbox, never on the host's file
// system at large: the pod's own work and run directories, or a directory of the node's
// --host-volumes (which admission and the node's guard let the workload use). Every
// access then goes through an os.Root of that directory, so a symlink the task left
// there cannot carry it out; and the agent gives the task's user only what it creates,
// never a directory that was there before (the pod's own two excepted, made for it).

// sandbox is where one task's paths may lead.
type sandbox struct {
	pod       []string // the pod's work and run dirs
	host      []string // the node's host volumes
	protected []string // never reachable, even below a host volume
}

// place is a path resolved in the sandbox: the directory it stays in and its path there.
type place struct {
	base string
	rel  string
	pod  bool // base is one of the pod's own directories
}

func (pl place) String() string { return filepath.Join(pl.base, pl.rel) }

// dir is the place of pl's parent directory.
func (pl place) dir() place {
	pl.rel = filepath.Dir(pl.rel)
	return pl
}

// resolve places the absolute path p (a relative one is the caller's to join to the work
// dir first); what names it in errors.
func (s sandbox) resolve(what, p string) (place, error) {
	switch {
	case p == "":
		return place{}, fmt.Errorf("%s: empty path", what)
	case v4.HasDotDot(p):
		return place{}, fmt.Errorf("%s %s: a '..' segment could leave the pod's directories", what, p)
	case !filepath.IsAbs(p):
		return place{}, fmt.Errorf("%s %s: not an absolute path", what, p)
	}
	p = filepath.Clean(p)
	for _, base := range s.pod {
		if rel, ok := below(p, base); ok {
			return place{base: base, rel: rel, pod: true}, nil
		}
	}
	real := ResolveExisting(p)
	for _, dir := range s.protected {
		if _, ok := below(real, dir); ok {
			return place{}, fmt.Errorf("%s %s: in %s, which no task may reach", what, p, dir)
		}
		if _, ok := below(dir, real); ok {
			return place{}, fmt.Errorf("%s %s: holds %s, which no task may reach", what, p, dir)
		}
	}
	for _, vol := range s.host {
		if rel, ok := below(p, vol); ok {
			return place{base: vol, rel: rel}, nil
		}
	}
	return place{}, fmt.Errorf("%s %s: outside the pod's directories and this node's host volumes", what, p)
}

// below returns p's path under dir when p is dir or below it (both clean and absolute).
func below(p, dir string) (string, bool) {
	rel, err := filepath.Rel(dir, p)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return "", false
	}
	return rel, true
}

// ResolveExisting resolves the symlinks of the longest existing prefix of the clean
// absolute path p and appends the rest, which does not exist yet: where p would lead
// today (the agent's guard judges host paths by it too).
func ResolveExisting(p string) string {
	rest := ""
	for cur := p; ; cur = filepath.Dir(cur) {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(real, rest)
		}
		if cur == filepath.Dir(cur) {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}

// cleanDirs cleans a list of absolute directories, dropping empty entries.
func cleanDirs(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		d, _ = strings.CutSuffix(strings.TrimSpace(d), ":ro")
		if d != "" {
			out = append(out, filepath.Clean(d))
		}
	}
	return out
}

// ensureDir makes pl a directory for the task's user and opens it. A missing directory
// is created, and so are its missing parents, each with workDirMode and given to cred;
// an existing one keeps its owner and mode, except the pod's own work and run dirs,
// which berth made for the task. Everything happens below pl.base, through an os.Root.
func ensureDir(pl place, cred *credential) (*os.Root, error) {
	base, err := os.OpenRoot(pl.base)
	if err != nil {
		return nil, err
	}
	defer base.Close()
	if pl.pod {
		if err := giveDir(base, ".", cred); err != nil {
			return nil, err
		}
	}
	cur := "."
	for _, part := range strings.Split(filepath.ToSlash(pl.rel), "/") {
		if part == "" || part == "." {
			continue
		}
		cur = filepath.Join(cur, part)
		fi, err := base.Stat(cur)
		switch {
		case err == nil && fi.IsDir():
			continue
		case err == nil:
			return nil, fmt.Errorf("%s is not a directory", filepath.Join(pl.base, cur))
		case !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
		if err := base.Mkdir(cur, workDirMode); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		} else if err == nil {
			if err := giveDir(base, cur, cred); err != nil {
				return nil, err
			}
		}
	}
	return base.OpenRoot(pl.rel)
}

// giveDir gives a directory berth made to the task's user, private to it.
func giveDir(root *os.Root, name string, cred *credential) error {
	if err := root.Chmod(name, workDirMode); err != nil { // the umask must not apply
		return err
	}
	if cred == nil {
		return nil
	}
	if err := root.Lchown(name, int(cred.UID), int(cred.GID)); err != nil {
		return fmt.Errorf("chown %s to %s: %w", filepath.Join(root.Name(), name), cred.Name, err)
	}
	return nil
}

// pidFileMax bounds what is read of a pid file: a pid and a newline.
const pidFileMax = 32

// readPidFile reads the pid a daemonising startCmd wrote, through the sandbox: a
// regular file of at most a few bytes. Its content is never repeated in an error (a
// pid file that is a link to another file must not reveal it).
func (s sandbox) readPidFile(path string) (int, error) {
	pl, err := s.resolve("pid file", path)
	if err != nil {
		return 0, err
	}
	root, err := os.OpenRoot(pl.base)
	if err != nil {
		return 0, fmt.Errorf("pid file %s: %w", path, err)
	}
	defer root.Close()
	// O_NONBLOCK: a FIFO must not hold the agent; it is refused below.
	f, err := root.OpenFile(pl.rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return 0, fmt.Errorf("pid file %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("pid file %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("pid file %s: not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, pidFileMax+1))
	if err != nil {
		return 0, fmt.Errorf("pid file %s: %w", path, err)
	}
	if len(b) > pidFileMax {
		return 0, fmt.Errorf("pid file %s: larger than a pid (%d bytes or more)", path, pidFileMax+1)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pid file %s: no pid in it (%d bytes)", path, len(b))
	}
	return pid, nil
}

// sandboxOf is where st's paths may lead. A task recorded by an agent that did not keep
// its pod's directories has them found from its log, which the executor puts in the
// pod's logs dir beside them.
func (d *Driver) sandboxOf(st *taskState) sandbox {
	pod := st.PodDirs
	if len(pod) == 0 && st.LogPath != "" {
		podDir := filepath.Dir(filepath.Dir(st.LogPath))
		pod = []string{filepath.Join(podDir, "work"), filepath.Join(podDir, "run")}
	}
	return sandbox{pod: pod, host: d.hostVolumes, protected: d.protected}
}
