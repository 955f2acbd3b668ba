package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/authconfig"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/client"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// ensureImage makes the container's image present per its pull policy (Always pulls,
// Never never does, anything else pulls only a missing image, as BCS's ForcePullImage)
// and returns its inspection, whose entrypoint decides the command line. setup (which
// may be nil) gives the credentials and where the pull's progress goes.
func (d *Driver) ensureImage(ctx context.Context, c *v4.Container, setup *driver.ContainerSetup) (image.InspectResponse, error) {
	if c.Image == "" {
		return image.InspectResponse{}, errors.New("the container has no image")
	}
	if c.ImagePullPolicy != v4.PullAlways {
		img, err := d.cli.ImageInspect(ctx, c.Image)
		switch {
		case err == nil:
			return img.InspectResponse, nil
		case !cerrdefs.IsNotFound(err):
			return img.InspectResponse, d.wrap(err, "image %s", c.Image)
		case c.ImagePullPolicy == v4.PullNever:
			return img.InspectResponse, driver.PullFailed(fmt.Errorf("image %s is not on the node, and its imagePullPolicy is Never", c.Image))
		}
	}
	if setup == nil {
		setup = &driver.ContainerSetup{}
	}
	auth := setup.PullAuth
	if auth == nil && (c.ImagePullUser != "" || c.ImagePullPasswd != "") {
		auth = &driver.RegistryAuth{Server: v4.ImageRegistry(c.Image), Username: c.ImagePullUser, Password: c.ImagePullPasswd}
	}
	progress := setup.PullProgress
	if progress == nil {
		progress = func(driver.PullEvent) {}
	}
	began := time.Now()
	progress(driver.PullEvent{Phase: driver.PullStarted, Image: c.Image})
	if err := d.pull(ctx, c.Image, auth, progress); err != nil {
		return image.InspectResponse{}, driver.PullFailed(err)
	}
	img, err := d.cli.ImageInspect(ctx, c.Image)
	if err != nil {
		return img.InspectResponse, d.wrap(err, "image %s after pulling it", c.Image)
	}
	progress(driver.PullEvent{Phase: driver.PullDone, Image: c.Image, Size: img.Size, Took: time.Since(began)})
	return img.InspectResponse, nil
}

// pull pulls one image, with credentials when given. The daemon reports most failures
// inside the progress stream, so the stream is read to its end for an error; its layer
// progress goes to progress. Errors are the daemon's (the registry's answer): the
// credentials go to the daemon only, encoded, and are never part of a message.
func (d *Driver) pull(ctx context.Context, ref string, auth *driver.RegistryAuth, progress func(driver.PullEvent)) error {
	var opts client.ImagePullOptions
	if auth != nil {
		enc, err := authconfig.Encode(registry.AuthConfig{Username: auth.Username, Password: auth.Password, ServerAddress: auth.Server})
		if err != nil {
			return fmt.Errorf("pull image %s: encode the credentials of %s", ref, auth.Server)
		}
		opts.RegistryAuth = enc
	}
	d.log.Info("pulling image", "image", ref, "auth", auth)
	rc, err := d.cli.ImagePull(ctx, ref, opts)
	if err != nil {
		if client.IsErrConnectionFailed(err) {
			return d.wrap(err, "pull image %s", ref)
		}
		// Not d.wrap's not-found: an image the registry lacks is no task that is gone.
		return fmt.Errorf("pull image %s: %w", ref, err)
	}
	defer rc.Close()
	t := newPullTracker(ref)
	err = readStream(rc, func(m *streamMessage) {
		if t.add(m) {
			progress(t.event())
		}
	})
	if err != nil {
		return fmt.Errorf("pull image %s: %w", ref, err)
	}
	return nil
}

// streamMessage is one message of a daemon's JSON progress stream (pull, import, build).
type streamMessage struct {
	Status         string `json:"status"`
	ID             string `json:"id"`
	ProgressDetail struct {
		Current int64 `json:"current"`
		Total   int64 `json:"total"`
	} `json:"progressDetail"`
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
}

// streamError reads a daemon's JSON progress stream (pull, import, build) and returns
// the first error it reports.
func streamError(r io.Reader) error {
	return readStream(r, func(*streamMessage) {})
}

// readStream reads a daemon's JSON progress stream, handing each message to fn, and
// returns the first error the stream reports.
func readStream(r io.Reader, fn func(*streamMessage)) error {
	dec := json.NewDecoder(r)
	for {
		var m streamMessage
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("reading the daemon's progress: %w", err)
		}
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			return errors.New(m.ErrorDetail.Message)
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
		fn(&m)
	}
}
