package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/berthhq/berth/internal/driver/process"
)

// taskUser resolves who runs the processes whose spec names no user (docs/security.md,
// "Users"): Config.DefaultUser when the operator chose one, which must exist, must not be
// in a forbidden group and, when root, needs --allow-privileged; else, for an agent
// running as root, a uid of each task group's own from Config.TaskUIDRange; else the
// agent's own user, which is not root. Every user but the agent's own must be able to
// reach the pods' directories under the data dir.
func (a *Agent) taskUser() (string, *process.UIDRange, error) {
	name := a.cfg.DefaultUser
	if name == "" {
		if os.Geteuid() != 0 {
			return "", nil, nil
		}
		r := process.DefaultUIDRange
		if a.cfg.TaskUIDRange != "" {
			var err error
			if r, err = process.ParseUIDRange(a.cfg.TaskUIDRange); err != nil {
				return "", nil, fmt.Errorf("agent: --task-uid-range: %w", err)
			}
		}
		if closed := unreachableBy(uint64(r.First), nil, a.cfg.DataDir); closed != "" {
			return "", nil, fmt.Errorf("agent: the processes' own uids cannot pass through %s to the data dir %s: "+
				"use a --data-dir they can reach (such as %s), or make %s passable (chmod o+x)",
				closed, a.cfg.DataDir, defaultDataDirHint, closed)
		}
		return "", &r, nil
	}
	u, err := resolveUser(name)
	if err != nil {
		return "", nil, fmt.Errorf("agent: --default-user %q: %w", name, err)
	}
	if u.uid == 0 && !a.cfg.AllowPrivileged {
		return "", nil, fmt.Errorf("agent: --default-user %s is root: every process without a user would run as root; that needs --allow-privileged", name)
	}
	if g, bad := a.guard.users.forbiddenGroup(u); bad && u.uid != 0 {
		return "", nil, fmt.Errorf("agent: --default-user %s is in group %s, which gives root-equivalent power on this node", name, g)
	}
	if uint64(os.Geteuid()) == uint64(u.uid) {
		return name, nil, nil
	}
	gids := make([]uint64, len(u.gids))
	for i, g := range u.gids {
		gids[i] = uint64(g)
	}
	if closed := unreachableBy(uint64(u.uid), gids, a.cfg.DataDir); closed != "" {
		return "", nil, fmt.Errorf("agent: the default user of processes, %s, cannot pass through %s to the data dir %s: "+
			"use a --data-dir it can reach (such as %s), make %s passable (chmod o+x), or choose --default-user",
			name, closed, a.cfg.DataDir, defaultDataDirHint, closed)
	}
	return name, nil, nil
}

// defaultDataDirHint is where a data dir works for every user (the CLI's default).
const defaultDataDirHint = "/var/lib/berth/agent"

// unreachableBy returns the first directory on the way to dir (dir included) that uid
// (with gids) cannot search, or "" when it reaches dir. Mode bits only: ACLs are not read.
func unreachableBy(uid uint64, gids []uint64, dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for p := abs; ; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil && !searchable(fi, uid, gids) {
			return p
		}
		if p == filepath.Dir(p) {
			return ""
		}
	}
}

// searchable reports whether uid (with gids) may search the directory fi.
func searchable(fi os.FileInfo, uid uint64, gids []uint64) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	perm := fi.Mode().Perm()
	switch {
	case !ok || uid == 0:
		return true
	case uint64(st.Uid) == uid:
		return perm&0o100 != 0
	case slices.Contains(gids, uint64(st.Gid)):
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}
