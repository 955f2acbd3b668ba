package executor

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// maxRemoteItem bounds a configmap item fetched over HTTP.
const maxRemoteItem = 16 << 20

// dataResolver turns a task's configmap and secret items into env variables and files,
// fetching each object once per pod.
type dataResolver struct {
	src     DataSource
	ns      string
	tg      string // the task group the pod runs, on whose behalf secrets are asked
	client  *http.Client
	configs map[string]*v4.ConfigMap
	secrets map[string]*v4.Secret
}

func newDataResolver(src DataSource, ns, tg string) *dataResolver {
	return &dataResolver{
		src:     src,
		ns:      ns,
		tg:      tg,
		client:  &http.Client{Timeout: time.Minute},
		configs: map[string]*v4.ConfigMap{},
		secrets: map[string]*v4.Secret{},
	}
}

// resolve returns the env variables (configmaps first, then secrets, in item order) and
// files of the refs. A missing object or data key fails: a task must not start without
// the configuration it asks for.
func (r *dataResolver) resolve(ctx context.Context, cms []v4.ConfigMapRef, secs []v4.SecretRef) ([]envVar, []driver.File, error) {
	var env []envVar
	var files []driver.File
	for _, ref := range cms {
		cm, err := r.configMap(ctx, ref.Name)
		if err != nil {
			return nil, nil, err
		}
		for _, it := range ref.Items {
			d, ok := cm.Datas[it.DataKey]
			if !ok {
				return nil, nil, fmt.Errorf("configmap %q has no data key %q", ref.Name, it.DataKey)
			}
			content, err := r.configContent(ctx, d)
			if err != nil {
				return nil, nil, fmt.Errorf("configmap %q key %q: %w", ref.Name, it.DataKey, err)
			}
			if err := inject(&env, &files, it.Type, it.KeyOrPath, content, it.ReadOnly, it.User); err != nil {
				return nil, nil, fmt.Errorf("configmap %q key %q: %w", ref.Name, it.DataKey, err)
			}
		}
	}
	for _, ref := range secs {
		s, err := r.secret(ctx, ref.SecretName)
		if err != nil {
			return nil, nil, err
		}
		for _, it := range ref.Items {
			d, ok := s.Datas[it.DataKey]
			if !ok {
				return nil, nil, fmt.Errorf("secret %q has no data key %q", ref.SecretName, it.DataKey)
			}
			content, err := base64.StdEncoding.DecodeString(d.Content)
			if err != nil {
				return nil, nil, fmt.Errorf("secret %q key %q: content is not base64: %w", ref.SecretName, it.DataKey, err)
			}
			if err := inject(&env, &files, it.Type, it.KeyOrPath, content, it.ReadOnly, it.User); err != nil {
				return nil, nil, fmt.Errorf("secret %q key %q: %w", ref.SecretName, it.DataKey, err)
			}
		}
	}
	return env, files, nil
}

// inject adds one configmap or secret item as an env variable or a file.
func inject(env *[]envVar, files *[]driver.File, typ, keyOrPath string, content []byte, readOnly bool, user string) error {
	switch typ {
	case v4.InjectEnv:
		*env = append(*env, envVar{keyOrPath, string(content)})
	case v4.InjectFile:
		*files = append(*files, driver.File{Path: keyOrPath, Content: content, ReadOnly: readOnly, User: user})
	default:
		return fmt.Errorf("unknown item type %q", typ)
	}
	return nil
}

func (r *dataResolver) configMap(ctx context.Context, name string) (*v4.ConfigMap, error) {
	return cached(r.configs, "configmap", name, r.src != nil, func() (*v4.ConfigMap, error) {
		return r.src.ConfigMap(ctx, r.ns, name)
	})
}

func (r *dataResolver) secret(ctx context.Context, name string) (*v4.Secret, error) {
	return cached(r.secrets, "secret", name, r.src != nil, func() (*v4.Secret, error) {
		return r.src.Secret(ctx, r.ns, name, r.tg)
	})
}

// cached returns cache[name], fetching and keeping it the first time; a pod that refers
// to one object several times asks the server once. kind names the object in errors.
func cached[T any](cache map[string]*T, kind, name string, haveSource bool, fetch func() (*T, error)) (*T, error) {
	if v, ok := cache[name]; ok {
		return v, nil
	}
	if !haveSource {
		return nil, fmt.Errorf("%s %q: no data source on this node", kind, name)
	}
	v, err := fetch()
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", kind, name, err)
	}
	if v == nil {
		return nil, fmt.Errorf("%s %q: not found", kind, name)
	}
	cache[name] = v
	return v, nil
}

// configContent is a configmap item's bytes: base64 content for "file" items, the body of
// the URL for "http" and "https" items (with basic auth when a user is given).
func (r *dataResolver) configContent(ctx context.Context, d v4.ConfigMapData) ([]byte, error) {
	switch d.Type {
	case "", "file":
		b, err := base64.StdEncoding.DecodeString(d.Content)
		if err != nil {
			return nil, fmt.Errorf("content is not base64: %w", err)
		}
		return b, nil
	case "http", "https":
		return r.fetch(ctx, d)
	}
	return nil, fmt.Errorf("item type %q is not supported", d.Type)
}

func (r *dataResolver) fetch(ctx context.Context, d v4.ConfigMapData) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.Content, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch: %w", err)
	}
	if d.RemoteUser != "" {
		req.SetBasicAuth(d.RemoteUser, d.RemotePasswd)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch %s: HTTP %d", d.Content, resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxRemoteItem+1))
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", d.Content, err)
	}
	if len(b) > maxRemoteItem {
		return nil, errors.New("fetch " + d.Content + ": larger than 16 MiB")
	}
	return b, nil
}
