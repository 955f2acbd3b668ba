package process

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Who may reach what a task is given (docs/process.md, "Files and permissions"): the
// agent's data dir stays closed to other users, except that a task running as another
// user (the spec's user) passes through the pod's directories (0711) to its work dir and
// log, which are its own; secrets and configmap files are readable by their owner only.

// workDirMode is the mode of a work dir berth creates: its user (and group) only, since
// the packages and configuration unpacked there are the task's.
const workDirMode = 0o750

// podDirs are the pod's directories given to a task (WorkBaseDir, RunBaseDir). They are
// berth's, so a directory in them that exists already may be given to the task's user; a
// directory elsewhere that exists is the host's (/run, /opt) and keeps its owner.
type podDirs []string

func (p podDirs) contain(dir string) bool {
	for _, base := range p {
		if base == "" {
			continue
		}
		if rel, err := filepath.Rel(base, dir); err == nil && filepath.IsLocal(rel) {
			return true
		}
	}
	return false
}

// makeWorkDir creates the task's work dir when missing and gives it to the user (BCS
// chowns workPath, existing or not). The pod's own work dir (own: the default when
// workPath is not set, created 0711 by the executor) is made private to the user as
// well; a workPath elsewhere that already exists keeps its mode.
func makeWorkDir(dir string, own bool, cred *credential) error {
	if _, err := mkdirOwned(dir, cred); err != nil {
		return err
	}
	if err := cred.chown(dir); err != nil {
		return err
	}
	if own {
		if err := os.Chmod(dir, workDirMode); err != nil {
			return fmt.Errorf("work dir: %w", err)
		}
	}
	return nil
}

// prepareDir makes sure dir exists for the task's user: created when missing (see
// mkdirOwned), and given to the user when it is one of the pod's directories.
func prepareDir(dir string, cred *credential, pod podDirs) error {
	created, err := mkdirOwned(dir, cred)
	if err != nil || created || !pod.contain(dir) {
		return err
	}
	return cred.chown(dir)
}

// mkdirOwned creates dir with workDirMode when it is missing, its missing parents 0755
// and the agent's, and gives dir to the user. An existing dir is left as it is: a pid file
// in /run must not hand /run to the task's user. It reports whether it created dir.
func mkdirOwned(dir string, cred *credential) (bool, error) {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return false, fmt.Errorf("%s is not a directory", dir)
		}
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return false, err
	}
	if err := os.Mkdir(dir, workDirMode); err != nil {
		if errors.Is(err, fs.ErrExist) { // created meanwhile, by another task of the pod
			return false, nil
		}
		return false, err
	}
	if err := os.Chmod(dir, workDirMode); err != nil { // the umask must not apply
		return true, err
	}
	return true, cred.chown(dir)
}
