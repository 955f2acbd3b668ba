package process

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"syscall"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// Pull policies of a uri (docs/process.md); IfNotPresent is the default.
const (
	PullAlways       = "Always"
	PullIfNotPresent = "IfNotPresent"
)

// newHTTPClient fetches packages, trusting the system's roots and extra. A stalled server
// must not hold a start forever; the body itself is bounded by the Start context only
// (packages can be large).
func newHTTPClient(extra []*x509.Certificate) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = time.Minute
	if len(extra) > 0 {
		roots, err := x509.SystemCertPool()
		if err != nil {
			roots = x509.NewCertPool()
		}
		for _, c := range extra {
			roots.AddCert(c)
		}
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}
	}
	return &http.Client{Transport: tr}
}

// fetchAll downloads every package and unpacks it into its outputDir (default dir, a
// relative one taken from it), resolved in the task's sandbox and created for the user
// when missing (ensureDir).
func (d *Driver) fetchAll(ctx context.Context, uris []v4.URI, defaultDir string, sb sandbox, cred *credential) error {
	for _, u := range uris {
		dest := u.OutputDir
		switch {
		case dest == "":
			dest = defaultDir
		case v4.HasDotDot(dest):
			return fmt.Errorf("outputDir %s: a '..' segment could leave the pod's directories", dest)
		case !filepath.IsAbs(dest):
			dest = filepath.Join(defaultDir, dest)
		}
		pl, err := sb.resolve("outputDir", dest)
		if err != nil {
			return err
		}
		src, name, err := d.obtain(ctx, u, sb)
		if err != nil {
			return err
		}
		err = func() error {
			defer src.Close()
			root, err := ensureDir(pl, cred)
			if err != nil {
				return fmt.Errorf("outputDir %s: %w", dest, err)
			}
			defer root.Close()
			return unpack(src, name, root, cred)
		}()
		if err != nil {
			return fmt.Errorf("unpack %s: %w", redact(u.Value), err)
		}
	}
	return nil
}

// obtain opens the package and returns the name its type is judged by: for file:// URLs
// the file itself, resolved in the sandbox (a host volume of the node; the agent's data
// dir and /proc never), for HTTP(S) the cache entry.
func (d *Driver) obtain(ctx context.Context, u v4.URI, sb sandbox) (file *os.File, name string, err error) {
	pu, err := url.Parse(u.Value)
	if err != nil {
		return nil, "", fmt.Errorf("package uri %s: %w", redact(u.Value), err)
	}
	policy := u.PullPolicy
	if policy == "" {
		policy = PullIfNotPresent
	}
	if policy != PullAlways && policy != PullIfNotPresent {
		return nil, "", fmt.Errorf("package uri %s: unknown pullPolicy %q (Always or IfNotPresent)", redact(u.Value), u.PullPolicy)
	}
	name = path.Base(pu.Path)
	if name == "/" || name == "." || name == ".." || name == "" {
		name = "package"
	}
	switch pu.Scheme {
	case "file":
		f, err := openInSandbox(sb, "package "+u.Value, pu.Path)
		return f, name, err
	case "http", "https":
	default:
		return nil, "", fmt.Errorf("package uri %s: unsupported scheme %q (http, https or file)", redact(u.Value), pu.Scheme)
	}
	cached, err := d.cachedDownload(ctx, u, policy, name)
	if err != nil {
		return nil, "", err
	}
	f, err := os.Open(cached)
	if err != nil {
		return nil, "", fmt.Errorf("package %s: %w", redact(u.Value), err)
	}
	return f, name, nil
}

// openInSandbox opens a regular file at the absolute path p through the sandbox.
func openInSandbox(sb sandbox, what, p string) (*os.File, error) {
	pl, err := sb.resolve(what, p)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(pl.base)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer root.Close()
	f, err := root.OpenFile(pl.rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file", what)
	}
	return f, nil
}

// cachedDownload returns the cache entry of an HTTP(S) package, downloading it unless
// the policy lets a cached copy do.
func (d *Driver) cachedDownload(ctx context.Context, u v4.URI, policy, name string) (string, error) {
	// The cache is keyed by the URL and the credentials: a task must not get, from the
	// cache, a package its own credentials would not download.
	sum := sha256.Sum256([]byte(u.User + "\x00" + u.Pwd + "\x00" + u.Value))
	key := hex.EncodeToString(sum[:12])
	dir := filepath.Join(d.cacheDir, key)
	cached := filepath.Join(dir, name)
	d.fetchLocks.Lock(key)
	defer d.fetchLocks.Unlock(key)
	if policy == PullIfNotPresent {
		if fi, err := os.Stat(cached); err == nil && fi.Mode().IsRegular() {
			d.log.Debug("package from cache", "uri", redact(u.Value))
			return cached, nil
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("package cache: %w", err)
	}
	if err := d.download(ctx, u, dir, cached); err != nil {
		return "", err
	}
	d.log.Info("package downloaded", "uri", redact(u.Value))
	return cached, nil
}

// download fetches u into a temporary file of dir and renames it to dest, so readers of
// dest always see a whole package.
func (d *Driver) download(ctx context.Context, u v4.URI, dir, dest string) error {
	shown := redact(u.Value)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.Value, nil)
	if err != nil {
		return fmt.Errorf("download %s: %w", shown, err)
	}
	if u.User != "" || u.Pwd != "" {
		req.SetBasicAuth(u.User, u.Pwd)
	}
	resp, err := d.http.Do(req)
	if err != nil {
		// url.Error repeats the URL as given, password included: keep only the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("download %s: %w", shown, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("download %s: %s", shown, resp.Status)
	}
	tmp, err := os.CreateTemp(dir, ".download-*")
	if err != nil {
		return fmt.Errorf("download %s: %w", shown, err)
	}
	_, err = io.Copy(tmp, resp.Body)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dest)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("download %s: %w", shown, err)
	}
	return nil
}

// redact hides a password written into a URL.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable url)"
	}
	return u.Redacted()
}
