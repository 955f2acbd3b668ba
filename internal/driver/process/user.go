package process

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// credential is the user a task's processes run as.
type credential struct {
	Name   string
	UID    uint32
	GID    uint32
	Groups []uint32
	Home   string
}

// lookupUser resolves a user name (or numeric uid); nil for "" (the agent's own user).
func lookupUser(name string) (*credential, error) {
	if name == "" {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		if _, numErr := strconv.ParseUint(name, 10, 32); numErr == nil {
			u, err = user.LookupId(name)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("user %q does not exist", name)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user %q: non-numeric uid %q or gid %q", name, u.Uid, u.Gid)
	}
	c := &credential{Name: u.Username, UID: uint32(uid), GID: uint32(gid), Home: u.HomeDir}
	gids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("groups of user %q: %w", name, err)
	}
	for _, g := range gids {
		if n, err := strconv.ParseUint(g, 10, 32); err == nil {
			c.Groups = append(c.Groups, uint32(n))
		}
	}
	return c, nil
}

// sys returns the credential for SysProcAttr; nil keeps the agent's user.
func (c *credential) sys() *syscall.Credential {
	if c == nil {
		return nil
	}
	return &syscall.Credential{Uid: c.UID, Gid: c.GID, Groups: c.Groups}
}

// chown gives path to the user; a no-op for the agent's own user.
func (c *credential) chown(path string) error {
	if c == nil {
		return nil
	}
	if err := os.Lchown(path, int(c.UID), int(c.GID)); err != nil {
		return fmt.Errorf("chown %s to %s: %w", path, c.Name, err)
	}
	return nil
}

// chownFile gives an open file to the user; a no-op for the agent's own user.
func (c *credential) chownFile(f *os.File) error {
	if c == nil {
		return nil
	}
	if err := f.Chown(int(c.UID), int(c.GID)); err != nil {
		return fmt.Errorf("chown %s to %s: %w", f.Name(), c.Name, err)
	}
	return nil
}

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// taskEnv completes the task's environment with what a login would give when the spec
// does not set it: PATH, HOME, USER and LOGNAME.
func taskEnv(env []string, c *credential) []string {
	has := map[string]bool{}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		has[k] = true
	}
	out := append([]string(nil), env...)
	add := func(k, v string) {
		if !has[k] && v != "" {
			out = append(out, k+"="+v)
		}
	}
	add("PATH", defaultPath)
	if c != nil {
		add("HOME", c.Home)
		add("USER", c.Name)
		add("LOGNAME", c.Name)
	} else if u, err := user.Current(); err == nil {
		add("HOME", u.HomeDir)
		add("USER", u.Username)
		add("LOGNAME", u.Username)
	} else {
		add("HOME", "/")
	}
	return out
}
