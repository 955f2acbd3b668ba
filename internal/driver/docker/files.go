package docker

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/moby/moby/api/types/mount"

	"github.com/berthhq/berth/internal/atomicfile"
	"github.com/berthhq/berth/internal/driver"
)

// taskFilesDir holds the configmap and secret files of one task on the host.
func (d *Driver) taskFilesDir(id string) string { return filepath.Join(d.filesDir, id) }

// writeFiles writes the task's files under DataDir/files/<id>/<path> and returns their
// bind mounts: one per file, so a file lands beside what the image has in that
// directory. A relative path is taken from the working dir (or /). Files are 0400 when
// read-only (and mounted read-only), 0600 otherwise, root's until ownFiles gives them to
// the container's user; File.User names a user of the host, which means nothing inside
// the image, so it is not applied.
func (d *Driver) writeFiles(t *driver.Task, workingDir string) ([]mount.Mount, error) {
	if len(t.Files) == 0 {
		return nil, nil
	}
	base := d.taskFilesDir(t.ID)
	if err := os.RemoveAll(base); err != nil {
		return nil, fmt.Errorf("files of task %s: %w", t.ID, err)
	}
	var mounts []mount.Mount
	for _, f := range t.Files {
		if f.Path == "" {
			return nil, fmt.Errorf("file with an empty path")
		}
		target := f.Path
		if !path.IsAbs(target) {
			target = path.Join("/", workingDir, target)
		}
		target = path.Clean(target)
		if target == "/" {
			return nil, fmt.Errorf("file %s: not a file path", f.Path)
		}
		host := filepath.Join(base, filepath.FromSlash(strings.TrimPrefix(target, "/")))
		mode := os.FileMode(0o600)
		if f.ReadOnly {
			mode = 0o400
		}
		if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
			return nil, fmt.Errorf("file %s: %w", target, err)
		}
		// Replaced whole: a container restarted meanwhile never reads half a file.
		if err := atomicfile.Write(host, f.Content, mode); err != nil {
			return nil, fmt.Errorf("file %s: %w", target, err)
		}
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: host, Target: target, ReadOnly: f.ReadOnly})
	}
	return mounts, nil
}

// volumeMounts binds the task's volumes. A missing host directory is created, as
// docker run -v does (the mount API would refuse it).
func volumeMounts(vols []driver.Mount) ([]mount.Mount, error) {
	var mounts []mount.Mount
	for _, v := range vols {
		if !filepath.IsAbs(v.HostPath) || !path.IsAbs(v.ContainerPath) {
			return nil, fmt.Errorf("volume %s:%s: both paths must be absolute", v.HostPath, v.ContainerPath)
		}
		if _, err := os.Stat(v.HostPath); os.IsNotExist(err) {
			if err := os.MkdirAll(v.HostPath, 0o755); err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.HostPath, err)
			}
		}
		m := mount.Mount{Type: mount.TypeBind, Source: v.HostPath, Target: v.ContainerPath, ReadOnly: v.ReadOnly}
		if v.Propagation != "" {
			m.BindOptions = &mount.BindOptions{Propagation: mount.Propagation(v.Propagation)}
		}
		mounts = append(mounts, m)
	}
	return mounts, nil
}

// fileSources are the host paths of the file mounts among mounts (those under the task's
// files dir).
func (d *Driver) fileSources(id string, mounts []mount.Mount) []string {
	base := d.taskFilesDir(id) + string(filepath.Separator)
	var out []string
	for _, m := range mounts {
		if strings.HasPrefix(m.Source, base) {
			out = append(out, m.Source)
		}
	}
	return out
}
