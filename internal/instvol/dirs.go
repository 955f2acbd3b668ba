package instvol

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// DefaultGrace is how long an instance's directories outlive its last task group on the
// node when nothing said the instance left for good (a restart's replacement not yet
// placed, a move elsewhere, a deletion while the agent was away).
const DefaultGrace = time.Hour

// Owner is who a volume's directory belongs to: the container's user when its spec names
// a numeric one (docker parameter user=UID[:GID]); otherwise (the image's user, which the
// agent does not know) the directory is 01777, like /tmp, and only reachable through the
// agent's own directories (0700).
type Owner struct {
	UID, GID int
	Known    bool
}

// Dirs is a node's instance volume directories under root (DATA-DIR/volumes). Its
// methods are safe for concurrent use; a directory is created, and taken out of the tree
// by a sweep, under one lock, so a sweep never removes what a start is preparing.
type Dirs struct {
	root string
	// removeTree removes a tree below the root ((*os.Root).RemoveAll; a test's hook).
	removeTree func(root *os.Root, name string) error

	sweeping sync.Mutex // one Sweep at a time: it removes trashDir outside mu

	mu    sync.Mutex
	holds map[string]Key       // pod (ns/name) -> the instance whose directories it mounts
	final map[string]bool      // instance rel -> left the node for good: removed at the next sweep
	idle  map[string]time.Time // instance rel -> when a sweep first found it unused
}

// New returns the directories under root, which is created (0700) at the first Mount.
func New(root string) *Dirs {
	return &Dirs{root: root, removeTree: (*os.Root).RemoveAll,
		holds: map[string]Key{}, final: map[string]bool{}, idle: map[string]time.Time{}}
}

// Root is the directory every instance volume is under.
func (d *Dirs) Root() string { return d.root }

// Mount creates (or finds again) the directory of the instance's volume at mountPath of
// its container'th container, owned by owner, and returns its host path. pod (ns/name of
// the task group) holds the instance in use until Release.
func (d *Dirs) Mount(k Key, pod string, container int, mountPath string, owner Owner) (string, error) {
	rel, err := volumeRel(k, container, mountPath)
	if err != nil {
		return "", err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	root, err := d.openRoot()
	if err != nil {
		return "", err
	}
	defer root.Close()
	if err := mkdirs(root, rel); err != nil {
		return "", fmt.Errorf("instance volume %s: %w", mountPath, err)
	}
	if err := setOwner(root, rel, owner); err != nil {
		return "", fmt.Errorf("instance volume %s: %w", mountPath, err)
	}
	d.holds[pod] = k
	delete(d.idle, k.rel())
	delete(d.final, k.rel())
	return filepath.Join(d.root, rel), nil
}

// openRoot creates the root (0700: only the agent passes through; containers get their
// directory by a bind mount) and opens it, refusing a symlink in its place.
func (d *Dirs) openRoot() (*os.Root, error) {
	if err := os.MkdirAll(d.root, 0o700); err != nil {
		return nil, fmt.Errorf("instance volumes: %w", err)
	}
	fi, err := os.Lstat(d.root)
	if err != nil {
		return nil, fmt.Errorf("instance volumes: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("instance volumes: %s is not a directory", d.root)
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(d.root, 0o700); err != nil {
			return nil, fmt.Errorf("instance volumes: %w", err)
		}
	}
	root, err := os.OpenRoot(d.root)
	if err != nil {
		return nil, fmt.Errorf("instance volumes: %w", err)
	}
	return root, nil
}

// mkdirs creates rel's components one by one inside root (which no symlink can leave),
// each 0700 but the last, and refuses any that is not a plain directory: none was made by
// a workload (a container sees only its own last component), and none is followed.
func mkdirs(root *os.Root, rel string) error {
	parts := strings.Split(rel, string(filepath.Separator))
	for i := range parts {
		p := filepath.Join(parts[:i+1]...)
		if err := root.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		fi, err := root.Lstat(p)
		if err != nil {
			return err
		}
		if !fi.Mode().IsDir() {
			return fmt.Errorf("%s is not a directory (%s)", p, fi.Mode().Type())
		}
	}
	return nil
}

// setOwner gives the volume's directory to its container's user, or opens it to every
// user of the container (01777) when the agent does not know which; what is inside is
// the container's and left as it is.
func setOwner(root *os.Root, rel string, owner Owner) error {
	if !owner.Known {
		return root.Chmod(rel, 0o777|fs.ModeSticky)
	}
	if err := root.Lchown(rel, owner.UID, owner.GID); err != nil {
		return err
	}
	return root.Chmod(rel, 0o755)
}

// Release ends pod's hold on its instance (the pod was removed); the instance's
// directories stay until a sweep finds them unused.
func (d *Dirs) Release(pod string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.holds, pod)
}

// LeftForGood records that an instance left the node for good (its last task group here
// was stopped for good, or bound to another node): the next sweep removes its
// directories unless a task group of it is on the node again by then.
func (d *Dirs) LeftForGood(k Key) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.final[k.rel()] = true
}
