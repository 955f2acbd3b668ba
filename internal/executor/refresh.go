package executor

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/instvol"
)

// Default modes of a configMap's and a secret's files (docs/pods.md, "Volumes").
const (
	configMapFileMode = 0o644
	secretFileMode    = 0o400
)

// followed reports whether the volume's files follow updates of its object.
func followed(v *v4.PodVolume) bool {
	return v.ConfigMap != nil && !v.ConfigMap.Static || v.Secret != nil && !v.Secret.Static
}

// FollowedVolumes is the number of the pod's configMap and secret volumes that follow
// updates of their objects: those RefreshVolumes fetches, one request each.
func (e *Executor) FollowedVolumes(namespace, name string) int {
	p := e.pod(namespace, name)
	if p == nil {
		return 0
	}
	n := 0
	for i := range p.plan.volumes {
		if followed(&p.plan.volumes[i]) {
			n++
		}
	}
	return n
}

// RefreshVolumes fetches the objects of the pod's followed configMap and secret volumes
// and rewrites the files of those whose resourceVersion changed since they were written,
// each swapped at once (volfiles.go). It reports how many volumes it rewrote. A pod not
// running yet, or stopped, is left alone; an object that cannot be fetched (deleted,
// the server away) keeps its files as they are, with the error returned.
func (e *Executor) RefreshVolumes(ctx context.Context, namespace, name string) (int, error) {
	p := e.pod(namespace, name)
	if p == nil {
		return 0, fmt.Errorf("%s/%s: %w", namespace, name, ErrUnknownPod)
	}
	p.vols.mu.Lock()
	defer p.vols.mu.Unlock()
	if !p.vols.ready || p.vols.released || p.ended() {
		return 0, nil
	}
	data := newDataResolver(e.cfg.Data, p.ns, p.name)
	n := 0
	var errs []error
	for i := range p.plan.volumes {
		v := &p.plan.volumes[i]
		if !followed(v) {
			continue
		}
		owner, err := p.plan.volumeOwner(v.Name)
		if err != nil {
			errs = append(errs, fmt.Errorf("volume %s: %w", v.Name, err))
			continue
		}
		wrote, err := p.writeDataVolume(ctx, v, data, owner)
		if err != nil {
			errs = append(errs, fmt.Errorf("volume %s: %w", v.Name, err))
		}
		if wrote {
			n++
			e.log.Info("volume updated", "namespace", p.ns, "name", p.name, "volume", v.Name, "version", p.vols.versions[v.Name])
		}
	}
	return n, errors.Join(errs...)
}

// writeDataVolume writes a configMap or secret volume's files when its object's
// resourceVersion is not the one written last; it reports whether it wrote. The caller
// holds p.vols.mu.
func (p *pod) writeDataVolume(ctx context.Context, v *v4.PodVolume, data *dataResolver, owner instvol.Owner) (bool, error) {
	var files []volFile
	var version string
	switch {
	case v.ConfigMap != nil:
		cm, err := data.configMap(ctx, v.ConfigMap.Name)
		if err != nil {
			return false, err
		}
		version = cm.Metadata.ResourceVersion
		if p.vols.written(v.Name, version) {
			return false, nil
		}
		if files, err = configMapFiles(ctx, data, cm, v.ConfigMap); err != nil {
			return false, err
		}
	case v.Secret != nil:
		s, err := data.secret(ctx, v.Secret.SecretName)
		if err != nil {
			return false, err
		}
		version = s.Metadata.ResourceVersion
		if p.vols.written(v.Name, version) {
			return false, nil
		}
		if files, err = secretFiles(s, v.Secret); err != nil {
			return false, err
		}
	default:
		return false, nil
	}
	if err := writeVolumeFiles(p.plan.volumeDir(v.Name), files, owner); err != nil {
		return false, err
	}
	if p.vols.versions == nil {
		p.vols.versions = map[string]string{}
	}
	p.vols.versions[v.Name] = version
	return true, nil
}

// written reports whether version of the volume's object is the one on disk (an object
// without a version is always written again).
func (s *volumeState) written(name, version string) bool {
	return version != "" && s.versions[name] == version
}

// configMapFiles are a configMap volume's files: its items, or every key.
func configMapFiles(ctx context.Context, data *dataResolver, cm *v4.ConfigMap, v *v4.ConfigMapVolume) ([]volFile, error) {
	return volumeFiles("configmap "+v.Name, cm.Datas, v.Items, v.DefaultMode, configMapFileMode, func(d v4.ConfigMapData) ([]byte, error) {
		return data.configContent(ctx, d)
	})
}

// secretFiles are a secret volume's files: its items, or every key.
func secretFiles(s *v4.Secret, v *v4.SecretVolume) ([]volFile, error) {
	return volumeFiles("secret "+v.SecretName, s.Datas, v.Items, v.DefaultMode, secretFileMode, func(d v4.SecretData) ([]byte, error) {
		return base64.StdEncoding.DecodeString(d.Content)
	})
}

// volumeFiles picks the items' keys of data (every key, each file named by it, without
// items) with their modes. A missing key fails: the volume would not be what the task
// expects.
func volumeFiles[D any](what string, data map[string]D, items []v4.KeyToPath, defMode *int, def fs.FileMode, content func(D) ([]byte, error)) ([]volFile, error) {
	if len(items) == 0 {
		for k := range data {
			items = append(items, v4.KeyToPath{Key: k, Path: k})
		}
		slices.SortFunc(items, func(a, b v4.KeyToPath) int { return cmp.Compare(a.Key, b.Key) })
	}
	mode := def
	if defMode != nil {
		mode = fs.FileMode(*defMode) & fs.ModePerm
	}
	out := make([]volFile, 0, len(items))
	for _, it := range items {
		d, ok := data[it.Key]
		if !ok {
			return nil, fmt.Errorf("%s has no key %q", what, it.Key)
		}
		if err := checkVolumeFile(it.Path); err != nil {
			return nil, fmt.Errorf("%s key %q: %w", what, it.Key, err)
		}
		b, err := content(d)
		if err != nil {
			return nil, fmt.Errorf("%s key %q: %w", what, it.Key, err)
		}
		m := mode
		if it.Mode != nil {
			m = fs.FileMode(*it.Mode) & fs.ModePerm
		}
		out = append(out, volFile{path: it.Path, content: b, mode: m})
	}
	return out, nil
}
