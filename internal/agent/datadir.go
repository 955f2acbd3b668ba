package agent

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
)

// dataDirMode is the mode of the agent's data dir (docs/agent.md, "Data directory"):
// other users may pass through it, to the work dirs of tasks that run as them, but not
// list it; the checkpoint (0600) and the drivers' state (0700) stay the agent's.
const dataDirMode = 0o711

// prepareDataDir creates the data dir, or sets its mode when it exists (an agent of an
// earlier version made it 0700, which no task of another user can pass). When a directory
// above it is closed to other users, tasks with a user cannot reach their work dirs: say
// so now rather than as their "permission denied".
func prepareDataDir(dir string, log *slog.Logger) error {
	if err := os.MkdirAll(dir, dataDirMode); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	if err := os.Chmod(dir, dataDirMode); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if closed := closedAncestor(dir); closed != "" {
		log.Warn("processes with a user other than root cannot reach their work dirs: a directory above the data dir is closed to other users (chmod o+x it, or use another --data-dir)",
			"dataDir", dir, "closed", closed)
	}
	return nil
}

// closedAncestor returns the first directory above dir that other users cannot search
// (no o+x), or "" when they can reach dir. ACLs are not read: this only warns.
func closedAncestor(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o001 == 0 {
			return p
		}
		if p == filepath.Dir(p) {
			return ""
		}
	}
}
