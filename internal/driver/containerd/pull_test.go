package containerd

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	client "github.com/containerd/containerd/v2/client"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/drivertest"
	"github.com/berthhq/berth/internal/testutil/registry"
)

// Pulls from a private registry on loopback (htpasswd, TLS from a test CA trusted
// through the driver's hosts directory): each policy, right and wrong credentials, a
// missing tag, an untrusted CA. Each case pulls into a namespace of its own, so the
// image is missing there until the case pulls it. (Subtest names make task IDs: short,
// without commas or quotes.)
func TestPull(t *testing.T) {
	requireContainerd(t)
	if why := registry.Missing(); why != "" {
		if os.Getenv("BERTH_REQUIRE_CONTAINERD") == "1" {
			t.Fatalf("BERTH_REQUIRE_CONTAINERD=1 but %s", why)
		}
		t.Skip(why)
	}
	reg := registry.Start(t)
	certs := t.TempDir()
	reg.TrustIn(t, certs)
	good := &driver.RegistryAuth{Server: reg.Host, Username: reg.User, Password: reg.Password}
	bad := &driver.RegistryAuth{Server: reg.Host, Username: reg.User, Password: "wrong-" + reg.Password}
	image := pushBusybox(t, certs, good, reg.Host+"/test/busybox:1")

	n := 0
	inNamespace := func(t *testing.T) *Driver {
		n++
		d, _ := newDriver(t, func(c *Config) { c.Namespace = "pull" + string(rune('a'+n)); c.CertsDir = certs })
		return d
	}
	// run starts a task of image with policy and auth, and returns the pull events it
	// told and its error.
	run := func(t *testing.T, d *Driver, image, policy string, auth *driver.RegistryAuth) ([]driver.PullEvent, error) {
		t.Helper()
		tk := task(t, "web", "exec sleep 100000")
		tk.Container.Image, tk.Container.ImagePullPolicy = image, policy
		var mu sync.Mutex
		var events []driver.PullEvent
		tk.Setup.PullAuth = auth
		tk.Setup.PullProgress = func(e driver.PullEvent) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, e)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := d.Start(ctx, tk)
		rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
		d.Remove(rctx, tk.ID)
		rcancel()
		mu.Lock()
		defer mu.Unlock()
		return events, err
	}
	pulled := func(t *testing.T, events []driver.PullEvent) bool {
		t.Helper()
		return len(events) >= 2 && events[0].Phase == driver.PullStarted && events[len(events)-1].Phase == driver.PullDone
	}
	failsWith := func(t *testing.T, err error, want string) {
		t.Helper()
		if err == nil || !errors.Is(err, driver.ErrPull) || !strings.Contains(err.Error(), want) {
			t.Fatalf("start: %v, want a pull error saying %q", err, want)
		}
		t.Logf("the error: %v", err)
		if strings.Contains(err.Error(), reg.Password) {
			t.Fatalf("the error shows the password: %v", err)
		}
	}

	t.Run("IfNotPresent pulls once", func(t *testing.T) {
		d := inNamespace(t)
		events, err := run(t, d, image, v4.PullIfNotPresent, good)
		if err != nil || !pulled(t, events) {
			t.Fatalf("start: %v, pull events %+v", err, events)
		}
		if done := events[len(events)-1]; done.Size <= 0 || done.Image != image {
			t.Errorf("PullDone %+v: want the image and its size", done)
		}
		// Present now: a wrong password does not matter, nothing is pulled.
		if events, err := run(t, d, image, v4.PullIfNotPresent, bad); err != nil || len(events) != 0 {
			t.Fatalf("second start: %v, pull events %+v", err, events)
		}
	})
	t.Run("Always pulls each time", func(t *testing.T) {
		d := inNamespace(t)
		for range 2 {
			if events, err := run(t, d, image, v4.PullAlways, good); err != nil || !pulled(t, events) {
				t.Fatalf("start: %v, pull events %+v", err, events)
			}
		}
		_, err := run(t, d, image, v4.PullAlways, bad)
		failsWith(t, err, "unauthorized")
	})
	t.Run("Never does not pull", func(t *testing.T) {
		d := inNamespace(t)
		events, err := run(t, d, image, v4.PullNever, good)
		failsWith(t, err, "is not on the node, and its imagePullPolicy is Never")
		if len(events) != 0 {
			t.Fatalf("pull events %+v", events)
		}
		if _, err := run(t, d, image, v4.PullIfNotPresent, good); err != nil {
			t.Fatal(err)
		}
		if events, err := run(t, d, image, v4.PullNever, nil); err != nil || len(events) != 0 {
			t.Fatalf("start of a present image: %v, pull events %+v", err, events)
		}
	})
	t.Run("a wrong password", func(t *testing.T) {
		_, err := run(t, inNamespace(t), image, v4.PullIfNotPresent, bad)
		failsWith(t, err, "pull image "+image+": unauthorized")
	})
	t.Run("no credentials", func(t *testing.T) {
		_, err := run(t, inNamespace(t), image, v4.PullIfNotPresent, nil)
		failsWith(t, err, "unauthorized")
	})
	t.Run("imagePullUser and imagePullPasswd", func(t *testing.T) {
		d := inNamespace(t)
		tk := task(t, "own", "exec sleep 100000")
		tk.Container.Image, tk.Container.ImagePullUser, tk.Container.ImagePullPasswd = image, reg.User, reg.Password
		start(t, d, tk)
	})
	t.Run("a missing tag", func(t *testing.T) {
		_, err := run(t, inNamespace(t), strings.TrimSuffix(image, ":1")+":2", v4.PullIfNotPresent, good)
		failsWith(t, err, "manifest unknown")
	})
	t.Run("progress in bytes of the layer", func(t *testing.T) {
		// A layer no namespace of the containerd has (pushed straight to the registry),
		// so that its bytes are downloaded, and progress read every 5 ms.
		layer := tarOf(t, "big", 24<<20)
		big := reg.PushLayer(t, "test/big", "1", layer)
		d := inNamespace(t)
		d.pullEvery = 5 * time.Millisecond
		events, err := run(t, d, big, v4.PullIfNotPresent, good)
		if errors.Is(err, driver.ErrPull) || !pulled(t, events) {
			t.Fatalf("start: %v, pull events %+v", err, events)
		}
		var last driver.PullEvent
		for _, e := range events[1 : len(events)-1] {
			if e.Phase != driver.PullProgress || e.Total != int64(len(layer)) || e.Layers != 1 || e.Current < last.Current || e.Current > e.Total {
				t.Fatalf("progress %+v after %+v: want the one layer's %d bytes, growing", e, last, len(layer))
			}
			last = e
		}
		if last.Phase != driver.PullProgress {
			t.Fatalf("no progress told: %+v", events)
		}
		t.Logf("%d progress events, the last %d/%d bytes, %d/%d layers done", len(events)-2, last.Current, last.Total, last.Done, last.Layers)
	})
	t.Run("an untrusted CA", func(t *testing.T) {
		d, _ := newDriver(t, func(c *Config) { c.Namespace = "pulluntrusted"; c.CertsDir = t.TempDir() })
		_, err := run(t, d, image, v4.PullIfNotPresent, good)
		failsWith(t, err, "/<host:port>/ca.crt")
	})
}

// pushBusybox pushes the package's busybox image to ref with containerd's client and
// the driver's resolver, and returns ref.
func pushBusybox(t *testing.T, certs string, auth *driver.RegistryAuth, ref string) string {
	t.Helper()
	d, _ := newDriver(t, func(c *Config) { c.CertsDir = certs })
	ctx, cancel := context.WithTimeout(d.ctx(context.Background()), time.Minute)
	defer cancel()
	name, err := normalizeImage(drivertest.BusyboxImage)
	if err != nil {
		t.Fatal(err)
	}
	img, err := d.cli.GetImage(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cli.Push(ctx, ref, img.Target(), client.WithResolver(d.resolver(auth))); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	return ref
}

// tarOf is a tar of one file, name, of size random bytes.
func tarOf(t *testing.T, name string, size int) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	data := make([]byte, size)
	rand.Read(data)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(size), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
