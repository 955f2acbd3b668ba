package process

import (
	"fmt"
	"os"
	"path/filepath"

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
		if f.Path == "" {
			return fmt.Errorf("file with an empty path")
		}
		p := f.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(workDir, p)
		}
		cred := taskCred
		if f.User != "" {
			var err error
			if cred, err = lookupUser(f.User); err != nil {
				return fmt.Errorf("file %s: %w", p, err)
			}
		}
		mode := os.FileMode(0o600)
		if f.ReadOnly {
			mode = 0o400
		}
		if err := writeFileAtomic(p, f.Content, mode, cred); err != nil {
			return fmt.Errorf("file %s: %w", p, err)
		}
	}
	return nil
}

func writeFileAtomic(p string, content []byte, mode os.FileMode, cred *credential) error {
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(p)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(content)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), mode) // CreateTemp makes 0600; the umask must not apply
	}
	if err == nil {
		err = cred.chown(tmp.Name())
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
