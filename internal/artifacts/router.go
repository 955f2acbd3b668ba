package artifacts

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// Router finds the repository a step names in a namespace and keeps the record of every
// key stored through it (in etcd, Record), so that a key is found again (the user's
// download route) and freed with its workflow (gc.go).
type Router struct {
	st *store.Store
	// emb is the embedded store; nil when the server has no data dir.
	emb *Embedded
	rec records
	tr  http.RoundTripper
	log *slog.Logger
}

// RouterConfig configures a Router.
type RouterConfig struct {
	Store *store.Store
	// Embedded is the server's embedded store (nil: none; artifacts naming no
	// repository then fail with ErrNoEmbedded).
	Embedded *Embedded
	// AllowPrivateEndpoints lets S3 endpoints be loopback, link-local or private
	// addresses (dial.go).
	AllowPrivateEndpoints bool
	Logger                *slog.Logger
}

// ErrNoEmbedded is the error of an artifact for the embedded store on a server without.
var ErrNoEmbedded = errors.New("this server has no embedded artifact repository (it runs without --data-dir): name an artifactrepository")

// NewRouter makes a Router.
func NewRouter(cfg RouterConfig) *Router {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Router{st: cfg.Store, emb: cfg.Embedded, rec: records{kv: cfg.Store.Client()},
		tr: NewTransport(cfg.AllowPrivateEndpoints), log: log}
}

// Embedded is the router's embedded store (nil when none).
func (r *Router) Embedded() *Embedded { return r.emb }

// ErrInvalidKey wraps the errors of CheckKey.
var ErrInvalidKey = errors.New("invalid artifact key")

// CheckKey refuses a key that is malformed or, for storing, not under the namespace
// ("<ns>/..."): the embedded store and the records are shared by every namespace.
func CheckKey(ns, key string) error {
	if err := v4.CheckArtifactKey(key); err != nil {
		return fmt.Errorf("%w: key %q: %v", ErrInvalidKey, key, err)
	}
	if !strings.HasPrefix(key, ns+"/") {
		return fmt.Errorf("%w: key %q is not under the namespace's prefix %q", ErrInvalidKey, key, ns+"/")
	}
	return nil
}

// Put stores body at key in repository repo of ns ("": the namespace's default, else
// the embedded store) and records it.
func (r *Router) Put(ctx context.Context, ns, repo, key string, body io.Reader, max int64) (v4.StoredArtifact, error) {
	if err := CheckKey(ns, key); err != nil {
		return v4.StoredArtifact{}, err
	}
	name, backend, err := r.resolve(ctx, ns, repo)
	if err != nil {
		return v4.StoredArtifact{}, err
	}
	info, err := backend.Put(ctx, key, body, max)
	if err != nil {
		return v4.StoredArtifact{}, err
	}
	if name != "" { // the embedded store records its own keys
		rec := Record{Repository: name, Digest: info.Digest, Size: info.Size, Created: time.Now().UTC()}
		if _, err := r.rec.link(ctx, key, rec); err != nil {
			return v4.StoredArtifact{}, err
		}
	}
	return v4.StoredArtifact{Repository: name, Key: key, Size: info.Size, Digest: info.Digest}, nil
}

// Get opens key in repository repo of ns. With repo "", the repository key was stored
// in (its record) comes first, then the namespace's default, then the embedded store.
func (r *Router) Get(ctx context.Context, ns, repo, key string) (io.ReadCloser, Info, error) {
	if err := v4.CheckArtifactKey(key); err != nil {
		return nil, Info{}, fmt.Errorf("%w: key %q: %v", ErrInvalidKey, key, err)
	}
	if repo == "" && strings.HasPrefix(key, ns+"/") {
		rec, _, err := r.rec.get(ctx, key)
		if err != nil {
			return nil, Info{}, err
		}
		if rec != nil {
			repo = rec.Repository
			if repo == "" {
				return r.embeddedGet(ctx, ns, key)
			}
		}
	}
	name, backend, err := r.resolve(ctx, ns, repo)
	if err != nil {
		return nil, Info{}, err
	}
	if name == "" {
		return r.embeddedGet(ctx, ns, key)
	}
	return backend.Get(ctx, key)
}

// embeddedGet reads the embedded store, whose keys are all under their namespace.
func (r *Router) embeddedGet(ctx context.Context, ns, key string) (io.ReadCloser, Info, error) {
	if err := CheckKey(ns, key); err != nil {
		return nil, Info{}, err
	}
	if r.emb == nil {
		return nil, Info{}, ErrNoEmbedded
	}
	return r.emb.Get(ctx, key)
}

// HolderURL returns the URL of the server whose embedded store is holder ("" when it
// never advertised one).
func (r *Router) HolderURL(ctx context.Context, holder string) (string, error) {
	resp, err := r.rec.kv.Get(ctx, holdersPrefix+holder)
	if err != nil {
		return "", fmt.Errorf("read the address of artifact store %s: %w", holder, err)
	}
	if len(resp.Kvs) == 0 {
		return "", nil
	}
	return string(resp.Kvs[0].Value), nil
}

// Lookup returns key's record, nil when none.
func (r *Router) Lookup(ctx context.Context, key string) (*Record, error) {
	rec, _, err := r.rec.get(ctx, key)
	return rec, err
}

// Delete removes key of ns from where its record says it is, and the record.
func (r *Router) Delete(ctx context.Context, ns, key string) error {
	rec, _, err := r.rec.get(ctx, key)
	if err != nil || rec == nil {
		return err
	}
	if rec.Repository == "" {
		if r.emb == nil {
			return ErrNoEmbedded
		}
		return r.emb.Delete(ctx, key)
	}
	_, backend, err := r.resolve(ctx, ns, rec.Repository)
	switch {
	case errors.Is(err, store.ErrNotFound) || errors.Is(err, ErrNotFound):
		// the repository (or its secret) is gone: nothing can reach the object
	case err != nil:
		return err
	default:
		if err := backend.Delete(ctx, key); err != nil {
			return err
		}
	}
	_, _, err = r.rec.unlink(ctx, key)
	return err
}

// resolve returns the repository repo of ns names ("" resolved to the namespace's
// default artifactrepository, else the embedded store, named "").
func (r *Router) resolve(ctx context.Context, ns, repo string) (string, Repository, error) {
	var obj *v4.ArtifactRepository
	if repo == "" {
		def, err := r.namespaceDefault(ctx, ns)
		if err != nil {
			return "", nil, err
		}
		if def == nil {
			if r.emb == nil {
				return "", nil, ErrNoEmbedded
			}
			return "", r.emb, nil
		}
		obj = def
	} else {
		got, err := store.Typed[*v4.ArtifactRepository](r.st, v4.KindArtifactRepository).Get(ctx, ns, repo)
		if errors.Is(err, store.ErrNotFound) {
			return "", nil, fmt.Errorf("%w: artifactrepository %s/%s does not exist", ErrNotFound, ns, repo)
		}
		if err != nil {
			return "", nil, fmt.Errorf("read artifactrepository %s/%s: %w", ns, repo, err)
		}
		obj = got
	}
	s3, err := r.s3Of(ctx, obj)
	if err != nil {
		return "", nil, err
	}
	return obj.Metadata.Name, s3, nil
}

// namespaceDefault returns the namespace's default artifactrepository, nil when none.
func (r *Router) namespaceDefault(ctx context.Context, ns string) (*v4.ArtifactRepository, error) {
	all, _, err := store.Typed[*v4.ArtifactRepository](r.st, v4.KindArtifactRepository).List(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("list artifactrepositories of %s: %w", ns, err)
	}
	for _, a := range all {
		if a.Spec.Default {
			return a, nil
		}
	}
	return nil, nil
}

// s3Of makes the client of an artifactrepository, its keys read from its secrets.
func (r *Router) s3Of(ctx context.Context, a *v4.ArtifactRepository) (*S3, error) {
	s := a.Spec.S3
	if s == nil {
		return nil, fmt.Errorf("artifactrepository %s/%s has no s3", a.Metadata.Namespace, a.Metadata.Name)
	}
	ak, err := r.secretItem(ctx, a.Metadata.Namespace, s.AccessKeySecret)
	if err != nil {
		return nil, fmt.Errorf("artifactrepository %s/%s: accessKeySecret: %w", a.Metadata.Namespace, a.Metadata.Name, err)
	}
	sk, err := r.secretItem(ctx, a.Metadata.Namespace, s.SecretKeySecret)
	if err != nil {
		return nil, fmt.Errorf("artifactrepository %s/%s: secretKeySecret: %w", a.Metadata.Namespace, a.Metadata.Name, err)
	}
	return NewS3(S3Config{Endpoint: s.Endpoint, Bucket: s.Bucket, Region: s.Region, KeyPrefix: s.KeyPrefix,
		Insecure: s.Insecure, AccessKey: ak, SecretKey: sk, Transport: r.tr})
}

// secretItem reads one item of a secret of ns (errors name the secret and item, never
// the value).
func (r *Router) secretItem(ctx context.Context, ns string, ref v4.SecretKeyRef) (string, error) {
	sec, err := store.Typed[*v4.Secret](r.st, v4.KindSecret).Get(ctx, ns, ref.Name)
	if errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("%w: secret %s/%s does not exist", ErrNotFound, ns, ref.Name)
	}
	if err != nil {
		return "", fmt.Errorf("read secret %s/%s: %w", ns, ref.Name, err)
	}
	d, ok := sec.Datas[ref.Key]
	if !ok {
		return "", fmt.Errorf("%w: secret %s/%s has no item %q", ErrNotFound, ns, ref.Name, ref.Key)
	}
	b, err := base64.StdEncoding.DecodeString(d.Content)
	if err != nil {
		return "", fmt.Errorf("secret %s/%s: item %q is not base64", ns, ref.Name, ref.Key)
	}
	return string(b), nil
}
