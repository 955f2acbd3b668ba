package containerd

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/berthhq/berth/internal/atomicfile"
	"github.com/berthhq/berth/internal/driver"
)

// taskFilesDir holds the configmap and secret files of one task on the host, and its
// resolver configuration.
func (d *Driver) taskFilesDir(id string) string { return filepath.Join(d.filesDir, id) }

// mounts returns the task's bind mounts: its volumes, then its files (written under
// DataDir/files/<id>/<path>, one mount per file, so a file lands beside what the image
// has in that directory; a relative path is taken from the working dir). Files are 0400
// when read-only (and mounted read-only), 0600 otherwise, root's: File.User names a user
// of the host, which means nothing inside the image.
func (d *Driver) mounts(t *driver.Task) ([]specs.Mount, error) {
	var out []specs.Mount
	for _, v := range t.Setup.Volumes {
		if !filepath.IsAbs(v.HostPath) || !path.IsAbs(v.ContainerPath) {
			return nil, fmt.Errorf("volume %s:%s: both paths must be absolute", v.HostPath, v.ContainerPath)
		}
		if _, err := os.Stat(v.HostPath); os.IsNotExist(err) {
			if err := os.MkdirAll(v.HostPath, 0o755); err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.HostPath, err)
			}
		}
		m := bindMount(v.HostPath, v.ContainerPath, v.ReadOnly)
		if v.Propagation != "" {
			m.Options = append(m.Options, v.Propagation)
		}
		out = append(out, m)
	}
	base := d.taskFilesDir(t.ID)
	if err := os.RemoveAll(base); err != nil {
		return nil, fmt.Errorf("files of task %s: %w", t.ID, err)
	}
	for _, f := range t.Files {
		target := f.Path
		if !path.IsAbs(target) {
			target = path.Join("/", t.Container.WorkingDir, target)
		}
		target = path.Clean(target)
		if f.Path == "" || target == "/" {
			return nil, fmt.Errorf("file %q: not a file path", f.Path)
		}
		host := filepath.Join(base, "root", filepath.FromSlash(strings.TrimPrefix(target, "/")))
		mode := os.FileMode(0o600)
		if f.ReadOnly {
			mode = 0o400
		}
		if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
			return nil, fmt.Errorf("file %s: %w", target, err)
		}
		if err := atomicfile.Write(host, f.Content, mode); err != nil {
			return nil, fmt.Errorf("file %s: %w", target, err)
		}
		out = append(out, bindMount(host, target, f.ReadOnly))
	}
	return out, nil
}

func bindMount(src, dst string, ro bool) specs.Mount {
	opt := "rw"
	if ro {
		opt = "ro"
	}
	return specs.Mount{Type: "bind", Source: src, Destination: dst, Options: []string{"rbind", opt}}
}
