package process

import (
	"fmt"
	"os"
	"path/filepath"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/atomicfile"
	"github.com/berthhq/berth/internal/driver"
)

// writeFiles writes the task's configmap and secret files before it starts: parent
// directories are created, the file belongs to its User when set and else to the task's
// user (taskCred, nil for the agent's own), and only that owner may read it: 0600, or
// 0400 when read-only. A secret must not be readable by every user of the host
// (docs/process.md, "Files and permissions"). A relative path is taken from the work
// dir; every path is resolved in the task's sandbox (sandbox.go) and written through an
// os.Root, so a symlink the task left (conf -> /etc) cannot carry the write out of it.
// Each file is written to a temporary name and renamed, so a running process that
// re-reads it never sees half of it.
func writeFiles(files []driver.File, workDir string, sb sandbox, taskCred *credential) error {
	for _, f := range files {
		pl, err := fileTarget(f.Path, workDir, sb)
		if err != nil {
			return err
		}
		cred := taskCred
		if f.User != "" {
			if cred, err = lookupUser(f.User); err != nil {
				return fmt.Errorf("file %s: %w", f.Path, err)
			}
		}
		mode := os.FileMode(0o600)
		if f.ReadOnly {
			mode = 0o400
		}
		if err := writeFileIn(pl, f.Content, mode, taskCred, cred); err != nil {
			return fmt.Errorf("file %s: %w", f.Path, err)
		}
	}
	return nil
}

// fileTarget places a file's path in the sandbox: a relative one in the work dir.
func fileTarget(p, workDir string, sb sandbox) (place, error) {
	switch {
	case p == "":
		return place{}, fmt.Errorf("file with an empty path")
	case v4.HasDotDot(p):
		return place{}, fmt.Errorf("file %s: a '..' segment could leave the work dir", p)
	case !filepath.IsAbs(p):
		p = filepath.Join(workDir, p)
	}
	pl, err := sb.resolve("file", p)
	if err != nil {
		return place{}, err
	}
	if pl.rel == "." || filepath.Clean(p) == filepath.Clean(workDir) {
		return place{}, fmt.Errorf("file %s: names a directory, not a file in it", p)
	}
	return pl, nil
}

// writeFileIn writes the file at pl: missing parents are created for the task's user
// (ensureDir), the content goes to a temporary name owned by the file's user and is
// renamed over it (atomicfile).
func writeFileIn(pl place, content []byte, mode os.FileMode, taskCred, cred *credential) error {
	dir, err := ensureDir(pl.dir(), taskCred)
	if err != nil {
		return err
	}
	defer dir.Close()
	return atomicfile.WriteIn(dir, filepath.Base(pl.rel), content, mode, cred.chownFile)
}
