package process

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/berthhq/berth/internal/atomicfile"
	"github.com/berthhq/berth/internal/driver"
)

// writeFiles writes the task's configmap and secret files before it starts: parent
// directories are created, the file belongs to its User when set and else to the task's
// user (taskCred, nil for the agent's own), and only that owner may read it: 0600, or
// 0400 when read-only. A secret must not be readable by every user of the host
// (docs/process.md, "Files and permissions"). A relative path is taken from the work
// dir. Each file is written to a temporary name and renamed, so a running process that
// re-reads it never sees half of it.
func writeFiles(files []driver.File, workDir string, taskCred *credential) error {
	for _, f := range files {
		base, rel, err := fileTarget(f.Path, workDir)
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
		if err := writeFileIn(base, rel, f.Content, mode, cred); err != nil {
			return fmt.Errorf("file %s: %w", f.Path, err)
		}
	}
	return nil
}

// fileTarget splits a file's path into the directory it must stay in and its path there.
// Validation refuses ".." in file targets (docs/spec.md, "Configmaps and secrets"); the
// driver refuses it again, as the agent writes as root. A relative path, or an absolute
// one under the work dir, stays in the work dir: it is written through an os.Root, so a
// symlink the task left there (conf -> /etc) cannot carry the write out of it. Any other
// absolute path is a file on the host, as BCS had it, and stays in its own directory.
func fileTarget(p, workDir string) (base, rel string, err error) {
	switch {
	case p == "":
		return "", "", fmt.Errorf("file with an empty path")
	case slices.Contains(strings.Split(filepath.ToSlash(p), "/"), ".."):
		return "", "", fmt.Errorf("file %s: a '..' segment could leave the work dir", p)
	case !filepath.IsAbs(p):
		rel = filepath.Clean(p)
	case filepath.Clean(p) == "/":
		return "", "", fmt.Errorf("file %s: not a file path", p)
	default:
		r, err := filepath.Rel(filepath.Clean(workDir), filepath.Clean(p))
		if err != nil || r == ".." || strings.HasPrefix(r, "../") {
			return filepath.Dir(p), filepath.Base(p), nil
		}
		rel = r
	}
	if rel == "." {
		return "", "", fmt.Errorf("file %s: names the work dir, not a file in it", p)
	}
	return workDir, rel, nil
}

// writeFileIn writes rel inside base through an os.Root: missing parents are created
// (0755, the agent's), the content goes to a temporary name owned by the task's user and
// is renamed over rel (atomicfile).
func writeFileIn(base, rel string, content []byte, mode os.FileMode, cred *credential) error {
	if err := os.MkdirAll(base, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(base)
	if err != nil {
		return err
	}
	defer root.Close()
	dir := filepath.Dir(rel)
	if dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return atomicfile.WriteIn(root, rel, content, mode, cred.chownFile)
}
