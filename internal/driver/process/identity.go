package process

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Processes whose spec names no user run under a uid of their own, one per task group,
// from a range the agent owns (as systemd's DynamicUser and Nomad's dynamic workload
// users do): no tenant can read another's /proc/<pid>/environ, cwd, work dir or secret
// files, since the kernel sees different users. The uid (with a group of the same
// number and no supplementary groups) is recorded in each task's state, so an agent that
// restarts keeps it, and is handed out again only after every task of its group has
// been removed and what the uid left in the shared temporary directories was deleted.

// UIDRange is a range of uids (and gids of the same numbers) given to task groups.
type UIDRange struct{ First, Last uint32 }

// DefaultUIDRange is the default range of dynamic task uids: above the 16-bit uids of
// ordinary accounts and of systemd's dynamic users (61184-65519), below the ranges that
// container runtimes map user namespaces to (100000 and up, /etc/subuid).
var DefaultUIDRange = UIDRange{First: 80000, Last: 89999}

// ParseUIDRange reads "FIRST-LAST".
func ParseUIDRange(s string) (UIDRange, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "-")
	first, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 32)
	last, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return UIDRange{}, fmt.Errorf("uid range %q: want FIRST-LAST, such as 80000-89999", s)
	}
	r := UIDRange{First: uint32(first), Last: uint32(last)}
	switch {
	case r.First < 1000:
		return UIDRange{}, fmt.Errorf("uid range %q: starts among the system's accounts (below 1000)", s)
	case r.Last < r.First:
		return UIDRange{}, fmt.Errorf("uid range %q: ends before it starts", s)
	case r.Last >= 1<<31-1:
		return UIDRange{}, fmt.Errorf("uid range %q: too high", s)
	}
	return r, nil
}

// identities hands out the dynamic uids. Safe for concurrent use.
type identities struct {
	r UIDRange

	mu      sync.Mutex
	next    uint32            // where the search for a free uid starts (next fit)
	byGroup map[string]uint32 // task group -> its uid
	refs    map[string]int    // task group -> tasks holding its uid
	// taken returns what tells the uids that are not free now (an account of the node,
	// a process running as it), read once per acquire; a field so tests can pretend.
	taken func() func(uid uint32) bool
}

func newIdentities(r UIDRange) *identities {
	return &identities{r: r, next: r.First, byGroup: map[string]uint32{}, refs: map[string]int{}, taken: uidTaken}
}

// hold records a uid found in a task's state at start (an agent that restarted).
func (ids *identities) hold(group string, uid uint32) {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	ids.byGroup[group] = uid
	ids.refs[group]++
}

// acquire returns the group's uid, taking a free one for its first task.
func (ids *identities) acquire(group string) (uint32, error) {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if uid, ok := ids.byGroup[group]; ok {
		ids.refs[group]++
		return uid, nil
	}
	used := make(map[uint32]bool, len(ids.byGroup))
	for _, uid := range ids.byGroup {
		used[uid] = true
	}
	taken := ids.taken()
	size := uint64(ids.r.Last-ids.r.First) + 1
	for i := uint64(0); i < size; i++ {
		uid := ids.r.First + uint32((uint64(ids.next-ids.r.First)+i)%size)
		if used[uid] || taken(uid) {
			continue
		}
		ids.next = uid + 1
		if ids.next > ids.r.Last || ids.next < ids.r.First {
			ids.next = ids.r.First
		}
		ids.byGroup[group], ids.refs[group] = uid, 1
		return uid, nil
	}
	return 0, fmt.Errorf("no free uid left in the task uid range %d-%d (%d task groups hold one)", ids.r.First, ids.r.Last, len(ids.byGroup))
}

// release drops one task's hold; it returns the uid when that was the group's last, for
// the caller to clean up after it.
func (ids *identities) release(group string) (uint32, bool) {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	uid, ok := ids.byGroup[group]
	if !ok {
		return 0, false
	}
	if ids.refs[group]--; ids.refs[group] > 0 {
		return 0, false
	}
	delete(ids.byGroup, group)
	delete(ids.refs, group)
	return uid, true
}

// uidTaken returns what tells whether a uid names an account of the node or owns a
// running process (left by an earlier agent whose data dir is gone): giving it out would
// share it. The processes are read once, when it is called.
func uidTaken() func(uint32) bool {
	running := map[uint32]bool{}
	if entries, err := os.ReadDir("/proc"); err == nil {
		for _, e := range entries {
			if _, err := strconv.Atoi(e.Name()); err != nil {
				continue
			}
			if fi, err := os.Stat(filepath.Join("/proc", e.Name())); err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok {
					running[st.Uid] = true
				}
			}
		}
	}
	return func(uid uint32) bool {
		if running[uid] {
			return true
		}
		_, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
		return err == nil
	}
}

// dynamicCredential is the credential of a dynamic uid: a group of the same number, no
// supplementary groups, the work dir as home.
func dynamicCredential(uid uint32, home string) *credential {
	return &credential{Name: dynamicUserName(uid), UID: uid, GID: uid, Groups: []uint32{}, Home: home}
}

// dynamicUserName is what USER says for a dynamic uid (it has no entry in /etc/passwd).
func dynamicUserName(uid uint32) string { return "berth-" + strconv.FormatUint(uint64(uid), 10) }

// sharedTempDirs are the directories every user may write to, swept of what a released
// uid left there.
var sharedTempDirs = []string{"/tmp", "/var/tmp", "/dev/shm"}

// sweepUID removes the entries of the shared temporary directories that uid owns, so the
// next task group given the uid finds nothing of the last one's. Only entries owned by
// that uid are touched; RemoveAll does not follow symlinks.
func sweepUID(uid uint32) error {
	var errs []error
	for _, dir := range sharedTempDirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			fi, err := os.Lstat(p)
			if err != nil {
				continue
			}
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == uid {
				if err := os.RemoveAll(p); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// credential is who the task runs as: its dynamic uid, its user, or the agent's own.
func (d *Driver) credential(st *taskState) (*credential, error) {
	if st.UID != 0 {
		return dynamicCredential(st.UID, st.WorkDir), nil
	}
	return lookupUser(st.User)
}

// releaseIdentity drops the task's hold on its group's dynamic uid; the last task of the
// group frees it, after removing what the uid left in the shared temporary directories.
func (d *Driver) releaseIdentity(st *taskState) {
	if st.UID == 0 || d.ids == nil {
		return
	}
	uid, last := d.ids.release(st.Group)
	if !last {
		return
	}
	if err := sweepUID(uid); err != nil {
		d.log.Warn("removing what a task group's uid left in the temporary directories", "uid", uid, "group", st.Group, "err", err)
	}
}
