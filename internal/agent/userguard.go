package agent

import (
	"fmt"
	"os/user"
	"slices"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
)

// Which node accounts a process may run as (docs/security.md, "Users"). A spec's user is
// the tenant's word: the node resolves it to a uid, whatever its spelling ("00", an alias
// of uid 0 such as "toor"), and runs it only when its operator listed it (--task-users),
// or, for root, when the workload was admitted with the root privilege and the node runs
// privileged work. An account in a group that gives root-equivalent power (the docker
// socket, sudo, raw disks, /etc/shadow) is never run, listed or not. Processes without a
// user run under a uid of their own (the process driver's dynamic users) and need none
// of this.

// DefaultForbiddenGroups are the groups whose members are as good as root on a usual
// Linux node: gid 0, the Docker socket's group, the sudoers' groups, raw disks, the
// system logs' group and /etc/shadow's.
var DefaultForbiddenGroups = []string{"root", "docker", "sudo", "wheel", "disk", "adm", "shadow"}

// userPolicy is what the node's operator allows as process users.
type userPolicy struct {
	// allowed are the uids of --task-users.
	allowed []uint32
	// forbiddenGIDs are the gids of the forbidden groups that exist here, and 0.
	forbiddenGIDs map[uint32]string
}

// resolvedUser is a user as the node knows it.
type resolvedUser struct {
	name string
	uid  uint32
	gids []uint32 // primary first
}

// newUserPolicy resolves --task-users (names or uids, each must exist on the node) and
// the forbidden groups (names or gids; groups missing here are skipped).
func newUserPolicy(taskUsers, forbiddenGroups []string) (userPolicy, error) {
	p := userPolicy{forbiddenGIDs: map[uint32]string{0: "root"}}
	for _, g := range forbiddenGroups {
		g = strings.TrimSpace(g)
		if g == "" {
			continue
		}
		if gid, ok := parseID(g); ok {
			p.forbiddenGIDs[gid] = g
			continue
		}
		if grp, err := user.LookupGroup(g); err == nil {
			if gid, ok := parseID(grp.Gid); ok {
				p.forbiddenGIDs[gid] = g
			}
		}
	}
	for _, name := range taskUsers {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		u, err := resolveUser(name)
		if err != nil {
			return userPolicy{}, fmt.Errorf("--task-users %s: %w", name, err)
		}
		if u.uid == 0 {
			return userPolicy{}, fmt.Errorf("--task-users %s: is root; root processes are allowed by --allow-privileged and the root privilege, not by this list", name)
		}
		if g, bad := p.forbiddenGroup(u); bad {
			return userPolicy{}, fmt.Errorf("--task-users %s: is in group %s, which gives root-equivalent power on this node", name, g)
		}
		p.allowed = append(p.allowed, u.uid)
	}
	return p, nil
}

// parseID reads a decimal uid or gid, leading zeros included ("00" is 0).
func parseID(s string) (uint32, bool) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 32)
	return uint32(n), err == nil
}

// resolveUser finds a user by name or by number, in every spelling of a number.
func resolveUser(name string) (resolvedUser, error) {
	var u *user.User
	var err error
	if uid, ok := parseID(name); ok {
		u, err = user.LookupId(strconv.FormatUint(uint64(uid), 10))
	} else {
		u, err = user.Lookup(name)
	}
	if err != nil {
		return resolvedUser{}, fmt.Errorf("no such user on this node")
	}
	uid, ok := parseID(u.Uid)
	if !ok {
		return resolvedUser{}, fmt.Errorf("user %s has a uid that is not a number (%q)", name, u.Uid)
	}
	out := resolvedUser{name: u.Username, uid: uid}
	if gid, ok := parseID(u.Gid); ok {
		out.gids = append(out.gids, gid)
	}
	ids, err := u.GroupIds()
	if err != nil {
		return resolvedUser{}, fmt.Errorf("groups of user %s: %w", name, err)
	}
	for _, g := range ids {
		if gid, ok := parseID(g); ok && !slices.Contains(out.gids, gid) {
			out.gids = append(out.gids, gid)
		}
	}
	return out, nil
}

// forbiddenGroup returns the first forbidden group u is in.
func (p userPolicy) forbiddenGroup(u resolvedUser) (string, bool) {
	for _, gid := range u.gids {
		if name, ok := p.forbiddenGIDs[gid]; ok {
			return name, true
		}
	}
	return "", false
}

// check says why the node refuses to run something as spelled (a process's or a file's
// user), or nil.
func (p userPolicy) check(field, spelled string) error {
	u, err := resolveUser(spelled)
	if err != nil {
		return fmt.Errorf("%s: user %q: %w", field, spelled, err)
	}
	if u.uid == 0 {
		// Admission asked for the root privilege only for the spellings it knows
		// (acl.IsRootUser); another name of uid 0 was admitted as an ordinary user.
		if !acl.IsRootUser(spelled) {
			return fmt.Errorf("%s: %s is another name of root on this node; write user: root, which needs the root privilege", field, spelled)
		}
		return nil // the root privilege: checked with the other privileges (guard.admit)
	}
	if g, bad := p.forbiddenGroup(u); bad {
		return fmt.Errorf("%s: %s is in group %s, which gives root-equivalent power on this node: it never runs tasks", field, spelled, g)
	}
	if !slices.Contains(p.allowed, u.uid) {
		return fmt.Errorf("%s: %s is not among this node's task users (its agent's --task-users); processes without a user run under a uid of their own", field, spelled)
	}
	return nil
}

// checkSpec checks every user a pod spec names: its processes' and their files'.
func (p userPolicy) checkSpec(spec *v4.PodSpec) []error {
	var errs []error
	add := func(field, spelled string) {
		if strings.TrimSpace(spelled) == "" {
			return
		}
		if err := p.check(field, strings.TrimSpace(spelled)); err != nil {
			errs = append(errs, err)
		}
	}
	for i, proc := range spec.Processes {
		pp := fmt.Sprintf("spec.template.spec.processes[%d]", i)
		add(pp+".user", proc.User)
		for j, cm := range proc.ConfigMaps {
			for k, it := range cm.Items {
				add(fmt.Sprintf("%s.configmaps[%d].items[%d].user", pp, j, k), it.User)
			}
		}
		for j, sec := range proc.Secrets {
			for k, it := range sec.Items {
				add(fmt.Sprintf("%s.secrets[%d].items[%d].user", pp, j, k), it.User)
			}
		}
	}
	return errs
}
