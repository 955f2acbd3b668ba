package containerd

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/core/remotes/docker/config"
	remoteerrors "github.com/containerd/containerd/v2/core/remotes/errors"
	cerrdefs "github.com/containerd/errdefs"
	clog "github.com/containerd/log"
	"github.com/sirupsen/logrus"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// DefaultCertsDir is containerd's hosts directory, where an operator puts what a
// registry needs (certs.d/<host>/ca.crt, client certificates, hosts.toml with mirrors):
// the same directory containerd's CRI plugin, ctr --hosts-dir and nerdctl read.
const DefaultCertsDir = "/etc/containerd/certs.d"

// pullImage pulls ref (normalized) with auth (nil: anonymously) into the namespace and
// unpacks it into the snapshotter, telling progress how it goes. Errors name the
// registry's answer and never a credential.
func (d *Driver) pullImage(ctx context.Context, ref string, auth *driver.RegistryAuth, progress func(driver.PullEvent)) (client.Image, error) {
	d.log.Info("pulling image", "image", ref, "auth", auth)
	ctx = clog.WithLogger(ctx, d.pullLogger())
	t := newPullTracker(ref, d.cli.ContentStore())
	pctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t.report(pctx, d.pullEvery, progress)
	}()
	img, err := d.cli.Pull(ctx, ref,
		client.WithResolver(d.resolver(auth)),
		client.WithPullUnpack,
		client.WithPullSnapshotter(d.snapshotter),
		client.WithImageHandlerWrapper(t.wrap),
	)
	stop()
	<-done
	if err != nil {
		return nil, d.pullError(ref, err)
	}
	return img, nil
}

// pullLogger is where containerd's client logs during a pull (each host it tried and
// why it failed, at info): the driver's log at debug, instead of logrus's standard
// logger on the agent's stderr. Its debug lines (token responses) are not read.
func (d *Driver) pullLogger() *clog.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	l.SetLevel(logrus.InfoLevel)
	l.AddHook(slogHook{d.log})
	return logrus.NewEntry(l)
}

// slogHook passes logrus entries on to a slog logger at debug.
type slogHook struct{ log *slog.Logger }

func (slogHook) Levels() []logrus.Level { return logrus.AllLevels }

func (h slogHook) Fire(e *logrus.Entry) error {
	attrs := make([]any, 0, 2*len(e.Data))
	for k, v := range e.Data {
		attrs = append(attrs, k, v)
	}
	h.log.Debug("containerd: "+e.Message, attrs...)
	return nil
}

// pullProgressEvery is how often a pull's progress is read and, when it changed, told:
// the Docker driver's contract is bytes of layers at most once a second.
const pullProgressEvery = time.Second

// resolver is the registry client of one pull: the hosts directory's configuration
// (TLS roots, client certificates, mirrors) and auth's credentials, given only to the
// registry they belong to, never to a mirror or another host.
//
// Every registry is spoken to over verified TLS unless its hosts.toml says otherwise
// (server = "http://...", skip_verify): containerd's own default for a loopback
// registry (plain HTTP first, then TLS without a certificate check) would send a pod's
// credentials unprotected to whatever listens on the port a spec names.
func (d *Driver) resolver(auth *driver.RegistryAuth) remotes.Resolver {
	hosts := config.ConfigureHosts(context.Background(), config.HostOptions{
		// The host comes from a parsed image reference: letters, digits, '-', '.' and a
		// port, so it names one directory under certsDir and never climbs out of it.
		HostDir:       config.HostDirFromRoot(d.certsDir),
		Credentials:   credentialsFor(auth),
		DefaultScheme: "https",
	})
	return docker.NewResolver(docker.ResolverOptions{Hosts: hosts})
}

// credentialsFor answers the authorizer's question for host with auth's user and
// password when host is auth's registry (Docker Hub under any of its names), and with
// none otherwise.
func credentialsFor(auth *driver.RegistryAuth) func(host string) (string, string, error) {
	return func(host string) (string, string, error) {
		if auth == nil || !sameRegistry(auth.Server, host) {
			return "", "", nil
		}
		return auth.Username, auth.Password, nil
	}
}

// sameRegistry tells whether host (what containerd talks to) is server (the registry
// of v4.ImageRegistry: docker.io for Docker Hub).
func sameRegistry(server, host string) bool {
	server, host = strings.ToLower(server), strings.ToLower(host)
	if server == host {
		return true
	}
	if server != v4.DockerHub {
		return false
	}
	switch host {
	case "registry-1.docker.io", "index.docker.io", "registry.hub.docker.com":
		return true
	}
	return false
}

// pullError says why a pull of ref failed the way the registry said it ("unauthorized",
// "manifest unknown", "denied"), with containerd's error behind it, marked as
// driver.ErrPull.
func (d *Driver) pullError(ref string, err error) error {
	if cerrdefs.IsUnavailable(err) {
		return d.wrap(err, "pull image %s", ref)
	}
	var status remoteerrors.ErrUnexpectedStatus
	var unknownCA x509.UnknownAuthorityError
	switch {
	case errors.Is(err, docker.ErrInvalidAuthorization):
		err = fmt.Errorf("unauthorized: %w", err)
	case errors.As(err, &status):
		err = fmt.Errorf("%s: %w", registryAnswer(status), err)
	case cerrdefs.IsNotFound(err):
		// The resolver's 404 for the manifest (its HEAD has no body to quote).
		err = fmt.Errorf("manifest unknown: %w", err)
	case errors.As(err, &unknownCA):
		err = fmt.Errorf("%w (to trust the registry's CA, put it in %s/<host:port>/ca.crt)", err, d.certsDir)
	}
	return driver.PullFailed(fmt.Errorf("pull image %s: %w", ref, err))
}

// registryAnswer is the registry's own error of a failed request ("unauthorized:
// authentication required", from the distribution API's error body) or, without one,
// what its status means.
func registryAnswer(e remoteerrors.ErrUnexpectedStatus) string {
	var body struct {
		Errors []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	if json.Unmarshal(e.Body, &body) == nil && len(body.Errors) > 0 && body.Errors[0].Code != "" {
		first := body.Errors[0]
		return truncate(strings.ReplaceAll(strings.ToLower(first.Code), "_", " ") + ": " + first.Message)
	}
	switch e.StatusCode {
	case 401:
		return "unauthorized"
	case 403:
		return "denied"
	case 404:
		return "not found"
	case 429:
		return "too many requests"
	}
	return "registry error"
}
