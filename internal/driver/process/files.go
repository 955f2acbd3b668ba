package process

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

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
// (0755, the agent's), the content goes to a temporary name and is renamed over rel.
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
	tmp, f, err := createTemp(root, filepath.Join(dir, "."+filepath.Base(rel)+"."))
	if err != nil {
		return err
	}
	_, err = f.Write(content)
	if err == nil {
		err = f.Chmod(mode) // the umask must not apply
	}
	if err == nil {
		err = cred.chownFile(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		root.Remove(tmp)
	}
	return err
}

// createTemp creates a new file prefix+random in root, readable by the agent only.
func createTemp(root *os.Root, prefix string) (string, *os.File, error) {
	for range 100 {
		name := prefix + strconv.FormatUint(uint64(rand.Uint32()), 36)
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return name, f, err
	}
	return "", nil, fmt.Errorf("no free temporary name for %s", prefix)
}
