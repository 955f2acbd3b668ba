package executor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/mountinfo"
)

// csiPlugin pod volumes (docs/volumes.md, "Plugins"): a task group that runs a CSI
// plugin gets the plugin's socket directory, <CSIPluginDir>/<name>, where it listens on
// csi.sock and where the agent's registry finds it. Its containers get it at their mount
// path and the agent's data dir at the same path with rshared propagation, so that what
// the plugin mounts onto a pod's volume directory (NodePublish) is seen on the node; its
// processes get it as a link and its socket as CSI_ENDPOINT. Admission asks for the
// csi-plugin privilege and the node's guard for --allow-privileged: the plugin reaches
// the data dir, every pod's volumes.

// csiEndpointVar is the variable a plugin process finds its socket address in, as
// CSI sidecars and drivers read it.
const csiEndpointVar = "CSI_ENDPOINT"

// csiPluginDir is the node directory of a csiPlugin volume.
func (p *pod) csiPluginDir(v *v4.PodVolume) (string, error) {
	root := p.e.cfg.CSIPluginDir
	if root == "" {
		return "", errors.New("this node has no CSI plugin directory")
	}
	// Admission checked the name; it becomes a path on the node, so again here.
	if !v4.ValidCSIPluginName(v.CSIPlugin.Name) {
		return "", fmt.Errorf("csiPlugin.name %q is not a CSI plugin name", v.CSIPlugin.Name)
	}
	return filepath.Join(root, v.CSIPlugin.Name), nil
}

// volumeHostDir is the node directory of pod volume v: the pod's own, or a CSI
// plugin's socket directory.
func (p *pod) volumeHostDir(v *v4.PodVolume) (string, error) {
	if v.CSIPlugin != nil {
		return p.csiPluginDir(v)
	}
	return p.plan.volumeDir(v.Name), nil
}

// prepareCSIPluginVolume makes the plugin's socket directory, 0750 and root's: only the
// plugin (root, as a CSI plugin runs) and the agent reach the socket. A directory left by
// an earlier run of the plugin is kept; anything else at its place is refused.
func (p *pod) prepareCSIPluginVolume(v *v4.PodVolume) error {
	dir, err := p.csiPluginDir(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
		return fmt.Errorf("csiPlugin: %w", err)
	}
	if err := os.Mkdir(dir, 0o750); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("csiPlugin: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("csiPlugin: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("csiPlugin: %s is not a directory", dir)
	}
	return os.Chmod(dir, 0o750)
}

// csiPluginVolume is the pod's first csiPlugin volume, nil without one.
func (p *podPlan) csiPluginVolume() *v4.PodVolume {
	for i := range p.volumes {
		if p.volumes[i].CSIPlugin != nil {
			return &p.volumes[i]
		}
	}
	return nil
}

// csiEndpoint is the CSI_ENDPOINT variable of the pod's process tasks (nil when the pod
// has no csiPlugin volume or is not a process pod).
func (p *pod) csiEndpoint(t *driver.Task) []envVar {
	v := p.plan.csiPluginVolume()
	if v == nil || t.Process == nil {
		return nil
	}
	dir, err := p.csiPluginDir(v)
	if err != nil {
		return nil // prepareVolumes refused the pod already
	}
	return []envVar{{csiEndpointVar, "unix://" + filepath.Join(dir, "csi.sock")}}
}

// csiPluginMounts are a plugin container's extra mounts: the agent's data dir at the
// same path with rshared propagation (made a shared mount first when it is not one,
// as the kubelet does with its own directory).
func (p *pod) csiPluginMounts() ([]driver.Mount, error) {
	if p.plan.csiPluginVolume() == nil {
		return nil, nil
	}
	dir, err := filepath.Abs(p.e.cfg.DataDir)
	if err != nil {
		return nil, err
	}
	// The mount table names real paths; the container sees the agent's own, which are
	// the paths it hands the plugin.
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("csiPlugin: the data dir %s: %w", dir, err)
	}
	if err := ensureShared(real); err != nil {
		return nil, fmt.Errorf("csiPlugin: the data dir %s: %w", dir, err)
	}
	return []driver.Mount{{HostPath: dir, ContainerPath: dir, Propagation: driver.PropagationRShared}}, nil
}

// sharing makes ensureShared calls take turns.
var sharing sync.Mutex

// ensureShared makes dir's mount shared, so that a container's rshared bind of it
// propagates mounts both ways: when the mount dir is on is not shared, dir is bound onto
// itself and that mount made shared.
func ensureShared(dir string) error {
	// Two plugin pods starting at once must not both bind dir onto itself.
	sharing.Lock()
	defer sharing.Unlock()
	mp, shared, err := mountOf(dir)
	if err != nil || shared {
		return err
	}
	if mp != dir {
		if err := syscall.Mount(dir, dir, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s onto itself: %w", dir, err)
		}
	}
	if err := syscall.Mount("", dir, "", syscall.MS_SHARED|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("make %s a shared mount: %w", dir, err)
	}
	return nil
}

// mountOf finds the mount dir is on (the deepest mount point at or above it) in the
// agent's mount table, and whether it is shared.
func mountOf(dir string) (mountPoint string, shared bool, err error) {
	err = mountinfo.Scan(mountInfo, func(m mountinfo.Mount) bool {
		// The deepest point wins, and a later line for the same point (a mount over it).
		if (m.Point == dir || m.Point == "/" || strings.HasPrefix(dir, m.Point+"/")) && len(m.Point) >= len(mountPoint) {
			mountPoint, shared = m.Point, m.Shared()
		}
		return true
	})
	if err != nil {
		return "", false, err
	}
	if mountPoint == "" {
		return "", false, fmt.Errorf("no mount holds %s", dir)
	}
	return mountPoint, shared, nil
}
