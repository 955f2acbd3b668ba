package containerd

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	remoteerrors "github.com/containerd/containerd/v2/core/remotes/errors"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/berthhq/berth/internal/driver"
)

func TestCredentialsFor(t *testing.T) {
	hub := &driver.RegistryAuth{Server: "docker.io", Username: "u", Password: "p"}
	private := &driver.RegistryAuth{Server: "reg.example:5000", Username: "u", Password: "p"}
	for _, c := range []struct {
		name string
		auth *driver.RegistryAuth
		host string
		want bool
	}{
		{"its registry", private, "reg.example:5000", true},
		{"case does not matter", private, "REG.example:5000", true},
		{"another port is another registry", private, "reg.example:5001", false},
		{"a mirror gets nothing", private, "mirror.example", false},
		{"Docker Hub under its API name", hub, "registry-1.docker.io", true},
		{"Docker Hub", hub, "docker.io", true},
		{"Docker Hub's credentials stay off others", hub, "reg.example:5000", false},
		{"anonymous", nil, "reg.example:5000", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			u, p, err := credentialsFor(c.auth)(c.host)
			if err != nil || (u != "" || p != "") != c.want {
				t.Fatalf("credentials for %s: %q %q %v, want some: %v", c.host, u, p, err, c.want)
			}
		})
	}
}

func TestPullError(t *testing.T) {
	d := &Driver{address: "/run/x.sock", certsDir: "/etc/containerd/certs.d"}
	ref := "reg.example/app:1"
	status := func(code int, body string) error {
		return fmt.Errorf("resolve: %w", remoteerrors.ErrUnexpectedStatus{StatusCode: code, Status: fmt.Sprint(code), Body: []byte(body),
			RequestMethod: "GET", RequestURL: "https://reg.example/v2/app/manifests/1"})
	}
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"the registry's error body", status(401, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`), "pull image reg.example/app:1: unauthorized: authentication required: resolve: "},
		{"a HEAD's 401 without a body", status(401, ""), "pull image reg.example/app:1: unauthorized: resolve: "},
		{"a 403", status(403, "nope"), ": denied: "},
		{"manifest unknown", fmt.Errorf("%s: %w", ref, cerrdefs.ErrNotFound), "pull image reg.example/app:1: manifest unknown: reg.example/app:1: not found"},
		{"no credentials", fmt.Errorf("pull access denied: %w", docker.ErrInvalidAuthorization), ": unauthorized: pull access denied"},
		{"an unknown CA", fmt.Errorf("tls: %w", x509.UnknownAuthorityError{}), "put it in /etc/containerd/certs.d/<host:port>/ca.crt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := d.pullError(ref, c.err)
			if !errors.Is(err, driver.ErrPull) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v (a pull error: %v), want it to say %q", err, errors.Is(err, driver.ErrPull), c.want)
			}
		})
	}
}

// fakeContent is the part of a content store the pull tracker reads.
type fakeContent struct {
	content.Store
	have     map[digest.Digest]bool
	statuses []content.Status
}

func (f *fakeContent) Info(_ context.Context, dg digest.Digest) (content.Info, error) {
	if f.have[dg] {
		return content.Info{Digest: dg}, nil
	}
	return content.Info{}, cerrdefs.ErrNotFound
}

func (f *fakeContent) ListStatuses(context.Context, ...string) ([]content.Status, error) {
	return f.statuses, nil
}

func TestPullTracker(t *testing.T) {
	layer := func(n byte, size int64) ocispec.Descriptor {
		return ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayerGzip, Digest: digest.FromBytes([]byte{n}), Size: size}
	}
	l1, l2, have := layer(1, 100), layer(2, 300), layer(3, 1000)
	config := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromString("config"), Size: 50}
	cs := &fakeContent{have: map[digest.Digest]bool{have.Digest: true}}
	tr := newPullTracker("img", cs)
	manifest := images.HandlerFunc(func(context.Context, ocispec.Descriptor) ([]ocispec.Descriptor, error) {
		return []ocispec.Descriptor{config, l1, l2, have}, nil
	})
	ctx := context.Background()
	if e, changed := tr.poll(ctx); changed {
		t.Fatalf("progress %+v told before a manifest named a layer", e)
	}
	if _, err := tr.wrap(manifest).Handle(ctx, ocispec.Descriptor{}); err != nil {
		t.Fatal(err)
	}
	step := func(want driver.PullEvent, wantChanged bool) {
		t.Helper()
		want.Phase, want.Image = driver.PullProgress, "img"
		got, changed := tr.poll(ctx)
		if got != want || changed != wantChanged {
			t.Fatalf("poll: %+v (changed %v), want %+v (changed %v)", got, changed, want, wantChanged)
		}
	}
	// The layer on the node and the config count in nothing.
	step(driver.PullEvent{Total: 400, Layers: 2}, true)
	step(driver.PullEvent{Total: 400, Layers: 2}, false)
	cs.statuses = []content.Status{{Ref: "layer-" + l1.Digest.String(), Offset: 60}, {Ref: "config-x", Offset: 10}}
	step(driver.PullEvent{Current: 60, Total: 400, Layers: 2}, true)
	// l1 written: its ingest is gone and the store has it; l2 claims more than its size.
	cs.statuses = []content.Status{{Ref: "layer-" + l2.Digest.String(), Offset: 9999}}
	cs.have[l1.Digest] = true
	step(driver.PullEvent{Current: 400, Total: 400, Layers: 2, Done: 1}, true)
}

func TestPullTrackerBoundsLayers(t *testing.T) {
	tr := newPullTracker("img", &fakeContent{})
	for i := range maxPullLayers + 10 {
		tr.announce(context.Background(), ocispec.Descriptor{Digest: digest.FromString(fmt.Sprint(i)), Size: 1})
	}
	if len(tr.layers) != maxPullLayers {
		t.Fatalf("%d layers kept, want at most %d", len(tr.layers), maxPullLayers)
	}
}

// containerd's client logs of a pull go to the driver's log at debug, its own debug
// lines (token responses among them) nowhere.
func TestPullLogger(t *testing.T) {
	var buf bytes.Buffer
	d := &Driver{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	l := d.pullLogger()
	l.WithField("host", "reg.example").Info("fetch failed")
	l.Debug("token response")
	got := buf.String()
	if !strings.Contains(got, `level=DEBUG msg="containerd: fetch failed" host=reg.example`) || strings.Contains(got, "token response") {
		t.Fatalf("driver log %q", got)
	}
}
