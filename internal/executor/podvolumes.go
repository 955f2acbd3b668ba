package executor

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/instvol"
)

// The pod's own volumes (docs/pods.md, "Volumes") live in the pod's directory,
// PodDir/volumes/<name>, made before any task starts (init tasks and sidecars see them
// too) and gone with the pod.

// volumeState is what the executor keeps of a pod's volumes between the start and the
// refreshes of its configMap and secret volumes (refresh.go).
type volumeState struct {
	mu sync.Mutex
	// ready is set once the volumes exist (prepared, or adopted from an earlier agent);
	// released once the pod stopped and its mounts went: a refresh writes only between.
	ready, released bool
	// versions are the resourceVersions of the objects last written, by volume name.
	versions map[string]string
}

// volumesDir is the directory of the pod's volumes.
func (p *podPlan) volumesDir() string { return filepath.Join(p.dir, "volumes") }

// volumeDir is the directory of the pod's volume name.
func (p *podPlan) volumeDir(name string) string { return filepath.Join(p.volumesDir(), name) }

// prepareVolumes makes every pod volume: an emptyDir's directory (a tmpfs in memory),
// a configMap's or secret's files, a FlexVolume's mount, a csi volume's publication.
func (p *pod) prepareVolumes(ctx context.Context, data *dataResolver) error {
	if len(p.plan.volumes) == 0 {
		return nil
	}
	if err := mkdirMode(p.plan.volumesDir(), podDirMode); err != nil {
		return err
	}
	p.vols.mu.Lock()
	defer p.vols.mu.Unlock()
	p.vols.released = false
	for i := range p.plan.volumes {
		v := &p.plan.volumes[i]
		if err := p.prepareVolume(ctx, v, data); err != nil {
			return fmt.Errorf("volume %s: %w", v.Name, err)
		}
	}
	p.vols.ready = true
	return nil
}

func (p *pod) prepareVolume(ctx context.Context, v *v4.PodVolume, data *dataResolver) error {
	dir := p.plan.volumeDir(v.Name)
	if v.FlexVolume != nil {
		return p.mountFlexVolume(ctx, v, dir, data)
	}
	if v.CSI != nil {
		return p.publishCSIVolume(ctx, v, dir)
	}
	if v.CSIPlugin != nil {
		return p.prepareCSIPluginVolume(v)
	}
	owner, err := p.plan.volumeOwner(v.Name)
	if err != nil {
		return err
	}
	if v.EmptyDir != nil {
		return makeEmptyDir(dir, v.EmptyDir, owner, p.plan.processes())
	}
	// The agent's own directory: no task may put anything in it (volfiles.go).
	if err := mkdirMode(dir, 0o755); err != nil {
		return err
	}
	_, err = p.writeDataVolume(ctx, v, data, owner)
	return err
}

// makeEmptyDir makes an emptyDir's directory. It belongs to the volume's owner, 0700,
// when the agent knows it. Otherwise, in a process pod, it is root's and closed, 0700,
// until the process driver gives it to the uid it runs the processes as (driver.Link's
// Give): processes are on the node's file system, where another user must not reach it.
// In a container pod, which only its containers see, anyone may write in it, with the
// sticky bit (as /tmp): containers may run as users the agent cannot know (the image's),
// and none may remove another's files. A Memory emptyDir is a tmpfs of its sizeLimit.
func makeEmptyDir(dir string, e *v4.EmptyDirVolume, owner instvol.Owner, processes bool) error {
	perm := os.ModeSticky | 0o777
	if owner.Known || processes {
		perm = 0o700
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("emptyDir: %w", err)
	}
	if e.Medium == v4.MediumMemory {
		if err := mountTmpfs(dir, e.SizeLimit, perm, owner); err != nil {
			return err
		}
	}
	if !owner.Known && processes {
		owner = instvol.Owner{Known: true} // root's, until the driver gives it
	}
	if owner.Known {
		if err := os.Chown(dir, owner.UID, owner.GID); err != nil {
			return fmt.Errorf("emptyDir: %w", err)
		}
	}
	if err := os.Chmod(dir, perm); err != nil {
		return fmt.Errorf("emptyDir: %w", err)
	}
	return nil
}

// mountTmpfs mounts a tmpfs of size (MB) at dir, unless one is there (a start after an
// agent restart): nosuid and nodev, as any directory a tenant writes.
func mountTmpfs(dir string, size v4.Quantity, perm os.FileMode, owner instvol.Owner) error {
	if mounted, err := isMountPoint(dir); err != nil || mounted {
		return err
	}
	mb, err := quantity(size)
	if err != nil || mb <= 0 || mb > v4.MaxEmptyDirMB {
		return fmt.Errorf("emptyDir sizeLimit %q: a positive number of MB is required in memory", size)
	}
	opts := fmt.Sprintf("size=%dk,mode=%o", int64(math.Ceil(mb*1024)), tmpfsMode(perm))
	if owner.Known {
		opts += fmt.Sprintf(",uid=%d,gid=%d", owner.UID, owner.GID)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount the emptyDir's tmpfs (%s): %w", opts, err)
	}
	return nil
}

// tmpfsMode is perm as the kernel's mode bits (os.ModeSticky is not 01000).
func tmpfsMode(perm os.FileMode) uint32 {
	m := uint32(perm.Perm())
	if perm&os.ModeSticky != 0 {
		m |= syscall.S_ISVTX
	}
	return m
}

// volumeOwner is the user every task that mounts the volume runs as, when the agent
// knows each: a process's user (the agent's own, root, without one), a container's
// numeric user parameter. Tasks of different or unknown users leave it unknown.
func (p *podPlan) volumeOwner(name string) (instvol.Owner, error) {
	var owner instvol.Owner
	first := true
	for _, t := range p.tasks {
		var o instvol.Owner
		switch {
		case t.process != nil && mounts(t.process.Volumes, name):
			var err error
			if o, err = processOwner(t.process.User); err != nil {
				return instvol.Owner{}, fmt.Errorf("process %s: %w", t.name, err)
			}
		case t.container != nil && mounts(t.container.Volumes, name):
			o = containerOwner(t.container)
		default:
			continue
		}
		if !o.Known || !first && o != owner {
			return instvol.Owner{}, nil
		}
		owner, first = o, false
	}
	return owner, nil
}

func mounts(vols []v4.Volume, name string) bool {
	for _, v := range vols {
		if v.Volume.PodVolume == name {
			return true
		}
	}
	return false
}

// processOwner is the uid and gid a process's user runs as. Without one, an agent that
// is not root runs it as its own user; a root agent as a uid it picks at the start (or
// its --default-user), which the executor does not know.
func processOwner(name string) (instvol.Owner, error) {
	if name == "" {
		if os.Geteuid() != 0 {
			return instvol.Owner{UID: os.Geteuid(), GID: os.Getegid(), Known: true}, nil
		}
		return instvol.Owner{}, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		if _, numErr := strconv.ParseUint(name, 10, 31); numErr == nil {
			u, err = user.LookupId(name)
		}
	}
	if err != nil {
		return instvol.Owner{}, fmt.Errorf("user %q does not exist", name)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 31)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 31)
	if err1 != nil || err2 != nil {
		return instvol.Owner{}, fmt.Errorf("user %q: non-numeric uid %q or gid %q", name, u.Uid, u.Gid)
	}
	return instvol.Owner{UID: int(uid), GID: int(gid), Known: true}, nil
}

// mountFlexVolume mounts a FlexVolume through the node's drivers, with the data of its
// secretRef.
func (p *pod) mountFlexVolume(ctx context.Context, v *v4.PodVolume, dir string, data *dataResolver) error {
	fv := p.e.cfg.FlexVolumes
	if fv == nil {
		return errors.New("this node has no FlexVolume drivers")
	}
	var secret map[string][]byte
	if ref := v.FlexVolume.SecretRef; ref != nil {
		s, err := data.secret(ctx, ref.Name)
		if err != nil {
			return err
		}
		if secret, err = secretData(s); err != nil {
			return err
		}
	}
	return fv.Mount(ctx, podKey(p.ns, p.name), dir, v.FlexVolume, secret)
}

// publishCSIVolume claims and publishes a csi volume at dir through the node's plugins.
func (p *pod) publishCSIVolume(ctx context.Context, v *v4.PodVolume, dir string) error {
	cv := p.e.cfg.CSIVolumes
	if cv == nil {
		return fmt.Errorf("csi volume %s: this node has no CSI support", v.CSI.Volume)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	return cv.Publish(ctx, podKey(p.ns, p.name), abs, p.ns, p.name, v.CSI)
}

// secretData is the decoded data of a secret.
func secretData(s *v4.Secret) (map[string][]byte, error) {
	out := make(map[string][]byte, len(s.Datas))
	for k, d := range s.Datas {
		b, err := base64.StdEncoding.DecodeString(d.Content)
		if err != nil {
			return nil, fmt.Errorf("secret %q key %q: content is not base64: %w", s.Metadata.Name, k, err)
		}
		out[k] = b
	}
	return out, nil
}

// releaseVolumes unmounts what the pod's volumes mounted once its tasks stopped: the
// tmpfs of Memory emptyDirs, the FlexVolumes and the csi volumes. It is idempotent (Remove calls it
// again); an error is logged, and Remove, which must unmount before it removes the
// directory, tries again.
func (p *pod) releaseVolumes(ctx context.Context) error {
	if len(p.plan.volumes) == 0 {
		return nil
	}
	p.vols.mu.Lock()
	defer p.vols.mu.Unlock()
	p.vols.released = true
	var errs []error
	for i := range p.plan.volumes {
		v := &p.plan.volumes[i]
		dir := p.plan.volumeDir(v.Name)
		switch {
		case v.FlexVolume != nil && p.e.cfg.FlexVolumes != nil:
			if err := p.e.cfg.FlexVolumes.Unmount(ctx, podKey(p.ns, p.name), dir, v.FlexVolume); err != nil {
				errs = append(errs, fmt.Errorf("volume %s: %w", v.Name, err))
			}
		case v.CSI != nil && p.e.cfg.CSIVolumes != nil:
			if err := p.unpublishCSIVolume(ctx, dir); err != nil {
				errs = append(errs, fmt.Errorf("volume %s: %w", v.Name, err))
			}
		case v.EmptyDir != nil && v.EmptyDir.Medium == v4.MediumMemory:
			if err := unmountBelow(dir); err != nil {
				errs = append(errs, fmt.Errorf("volume %s: %w", v.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

func (p *pod) unpublishCSIVolume(ctx context.Context, dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	return p.e.cfg.CSIVolumes.Unpublish(ctx, podKey(p.ns, p.name), abs)
}

// checkVolumeFile refuses a file name of a volume that would leave its directory or
// take the name of the volume's own entries (a configmap key "..data"); admission
// refuses such item paths, this is for keys taken as they are.
func checkVolumeFile(p string) error {
	if !filepath.IsLocal(p) || strings.HasPrefix(p, "..") || v4.HasDotDot(p) {
		return fmt.Errorf("%q cannot be a file of the volume", p)
	}
	return nil
}

// podVolume is the pod's volume called name, nil when it has none.
func (p *podPlan) podVolume(name string) *v4.PodVolume {
	for i := range p.volumes {
		if p.volumes[i].Name == name {
			return &p.volumes[i]
		}
	}
	return nil
}

// processLinks are the links a process's volumes put in its work directory, which the
// process driver makes (driver.Link); an emptyDir of a user the executor cannot know is
// the driver's to give to the process's.
func (p *pod) processLinks(t *v4.ProcessTask) ([]driver.Link, error) {
	var out []driver.Link
	for _, v := range t.Volumes {
		pv := p.plan.podVolume(v.Volume.PodVolume)
		if pv == nil {
			return nil, fmt.Errorf("volume %s: the pod has no volume %q", v.Volume.MountPath, v.Volume.PodVolume)
		}
		target, err := p.volumeHostDir(pv)
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Volume.MountPath, err)
		}
		l := driver.Link{Path: v.Volume.MountPath, Target: target}
		if pv.EmptyDir != nil {
			owner, err := p.plan.volumeOwner(pv.Name)
			if err != nil {
				return nil, err
			}
			l.Give = !owner.Known
		}
		out = append(out, l)
	}
	return out, nil
}

// processes reports whether the pod runs processes (not containers).
func (p *podPlan) processes() bool { return len(p.tasks) > 0 && p.tasks[0].process != nil }
