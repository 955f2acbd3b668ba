package agent

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
)

// DefaultTaskUser is the user an agent running as root creates, and runs the processes
// whose spec names no user as (docs/agent.md, "Workload privilege"): a spec without a
// user must not run as root.
const DefaultTaskUser = "berth-task"

// taskUser resolves Config.DefaultUser for the process driver: the named user, which must
// exist; else, for an agent running as root, DefaultTaskUser, created when missing; else
// "" (the agent's own user, which is not root). A default user that is root needs
// --allow-privileged, and every default user but the agent's own must be able to reach
// the pods' directories under the data dir.
func (a *Agent) taskUser() (string, error) {
	name := a.cfg.DefaultUser
	if name == "" {
		if os.Geteuid() != 0 {
			return "", nil
		}
		name = DefaultTaskUser
		if err := ensureSystemUser(name); err != nil {
			return "", fmt.Errorf("agent: the default user of processes: %w (or give --default-user)", err)
		}
	}
	u, err := lookupUser(name)
	if err != nil {
		return "", fmt.Errorf("agent: --default-user %q: %w", name, err)
	}
	if u.Uid == "0" && !a.cfg.AllowPrivileged {
		return "", fmt.Errorf("agent: --default-user %s is root: every process without a user would run as root; that needs --allow-privileged", name)
	}
	if strconv.Itoa(os.Geteuid()) == u.Uid {
		return name, nil
	}
	if closed := unreachableBy(u, a.cfg.DataDir); closed != "" {
		return "", fmt.Errorf("agent: the default user of processes, %s, cannot pass through %s to the data dir %s: "+
			"use a --data-dir it can reach (such as %s), make %s passable (chmod o+x), or choose --default-user",
			name, closed, a.cfg.DataDir, defaultDataDirHint, closed)
	}
	return name, nil
}

// defaultDataDirHint is where a data dir works for every user (the CLI's default).
const defaultDataDirHint = "/var/lib/berth/agent"

// lookupUser finds a user by name, or by number.
func lookupUser(name string) (*user.User, error) {
	u, err := user.Lookup(name)
	if err == nil {
		return u, nil
	}
	if _, numErr := strconv.ParseUint(name, 10, 32); numErr == nil {
		if u, err := user.LookupId(name); err == nil {
			return u, nil
		}
	}
	return nil, fmt.Errorf("no such user on this node")
}

// ensureSystemUser creates a system user (and its group) without a home or a login
// shell, unless it exists: with useradd (Debian, Red Hat), else BusyBox's adduser
// (Alpine). Two agents of one host may race: the loser finds the user made.
func ensureSystemUser(name string) error {
	if _, err := user.Lookup(name); err == nil {
		return nil
	}
	var cmd *exec.Cmd
	switch {
	case commandExists("useradd"):
		cmd = exec.Command("useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
			"--shell", "/usr/sbin/nologin", "--comment", "berth tasks", name)
	case commandExists("adduser"):
		cmd = exec.Command("adduser", "-S", "-D", "-H", "-h", "/nonexistent", "-s", "/sbin/nologin", "-g", "berth tasks", name)
	default:
		return fmt.Errorf("cannot create user %s: neither useradd nor adduser is installed", name)
	}
	out, err := cmd.CombinedOutput()
	if _, lerr := user.Lookup(name); lerr == nil {
		return nil
	}
	if err == nil {
		err = errors.New("the user is still missing")
	}
	return fmt.Errorf("create user %s: %w: %s", name, err, out)
}

func commandExists(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

// unreachableBy returns the first directory on the way to dir (dir included) that u cannot
// search, or "" when u reaches dir. Mode bits only: ACLs are not read.
func unreachableBy(u *user.User, dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	var gids []uint64
	if ids, err := u.GroupIds(); err == nil {
		for _, g := range ids {
			if n, err := strconv.ParseUint(g, 10, 32); err == nil {
				gids = append(gids, n)
			}
		}
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
