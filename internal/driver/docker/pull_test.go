package docker

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// fakeDaemon answers the image calls of a pull: inspect (404 until pulled), and create,
// which checks the credentials it is sent and streams progress, or the registry's error.
type fakeDaemon struct {
	mu      sync.Mutex
	present bool
	pulls   int
	auth    map[string]string // the last pull's decoded X-Registry-Auth
	want    string            // the password the registry takes
}

func (f *fakeDaemon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case strings.HasSuffix(r.URL.Path, "/_ping"):
		w.Header().Set("Api-Version", "1.41")
	case strings.HasSuffix(r.URL.Path, "/json") && strings.Contains(r.URL.Path, "/images/"):
		if !f.present {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"message":"No such image"}`)
			return
		}
		fmt.Fprint(w, `{"Id":"sha256:abc","Size":27000000,"Config":{}}`)
	case strings.HasSuffix(r.URL.Path, "/images/create"):
		f.pulls++
		if strings.HasSuffix(r.URL.Query().Get("tag"), "2") {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"message":"manifest for r.local:5000/app:2 not found: manifest unknown: manifest unknown"}`)
			return
		}
		b, _ := base64.URLEncoding.DecodeString(r.Header.Get("X-Registry-Auth"))
		f.auth = map[string]string{}
		json.Unmarshal(b, &f.auth)
		if f.auth["password"] != f.want {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"message":"Get \"https://r.local:5000/v2/\": unauthorized: authentication required"}`)
			return
		}
		for _, m := range []string{
			`{"status":"Pulling from app","id":"1"}`,
			`{"status":"Already exists","id":"l0"}`,
			`{"status":"Pulling fs layer","id":"l1"}`, `{"status":"Pulling fs layer","id":"l2"}`,
			`{"status":"Downloading","progressDetail":{"current":5000000,"total":20000000},"id":"l1"}`,
			`{"status":"Downloading","progressDetail":{"current":1000000,"total":7000000},"id":"l2"}`,
			`{"status":"Download complete","id":"l1"}`, `{"status":"Pull complete","id":"l1"}`,
			`{"status":"Download complete","id":"l2"}`, `{"status":"Pull complete","id":"l2"}`,
		} {
			fmt.Fprintln(w, m)
		}
		f.present = true
	default:
		w.WriteHeader(http.StatusNotImplemented)
	}
}

// seen is how many pulls the daemon had and the last one's credentials.
func (f *fakeDaemon) seen() (int, map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pulls, f.auth
}

func (f *fakeDaemon) setPresent(p bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.present = p
}

func fakeDriver(t *testing.T, f *fakeDaemon, log *bytes.Buffer) *Driver {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	d, err := New(Config{Host: "tcp://" + srv.Listener.Addr().String(), DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// A pull sends the credentials to the daemon only: its progress is summed over the
// layers it downloads, and a refusal is the registry's answer, marked ErrPull, without
// the password in the error or the logs.
func TestPullCredentialsAndProgress(t *testing.T) {
	const pw = "s3cr3t-PW"
	var log bytes.Buffer
	f := &fakeDaemon{want: pw}
	d := fakeDriver(t, f, &log)
	ctx := context.Background()
	c := &v4.Container{Image: "r.local:5000/app:1", ImagePullPolicy: v4.PullIfNotPresent}
	var events []driver.PullEvent
	setup := &driver.ContainerSetup{
		PullAuth:     &driver.RegistryAuth{Server: "r.local:5000", Username: "ann", Password: "wrong-" + pw},
		PullProgress: func(e driver.PullEvent) { events = append(events, e) },
	}
	_, err := d.ensureImage(ctx, c, setup)
	if !errors.Is(err, driver.ErrPull) || !strings.Contains(err.Error(), "pull image r.local:5000/app:1") ||
		!strings.Contains(err.Error(), "unauthorized: authentication required") {
		t.Fatalf("a refused pull: %v", err)
	}
	if _, auth := f.seen(); auth["username"] != "ann" || auth["serveraddress"] != "r.local:5000" {
		t.Errorf("the daemon was sent %v", auth["username"])
	}
	for what, s := range map[string]string{"error": err.Error(), "log": log.String(), "auth": fmt.Sprint(setup.PullAuth), "%#v": fmt.Sprintf("%#v", setup.PullAuth)} {
		if strings.Contains(s, pw) {
			t.Errorf("the %s holds the password: %s", what, s)
		}
	}

	events = nil
	setup.PullAuth.Password = pw
	img, err := d.ensureImage(ctx, c, setup)
	if err != nil || img.Size != 27000000 {
		t.Fatalf("pull: %v %v", img.Size, err)
	}
	if len(events) < 3 || events[0].Phase != driver.PullStarted || events[len(events)-1].Phase != driver.PullDone ||
		events[len(events)-1].Size != 27000000 {
		t.Fatalf("events %+v", events)
	}
	mid := events[len(events)-2]
	if mid.Phase != driver.PullProgress || mid.Layers != 2 || mid.Done != 2 || mid.Current != 27000000 || mid.Total != 27000000 {
		t.Errorf("last progress %+v: want 2 layers (not the one the node had) of 27 MB, done", mid)
	}
	if p := events[3]; p.Current != 5000000 || p.Total != 20000000 { // after both layers' announcements
		t.Errorf("first bytes %+v", p)
	}

	// IfNotPresent does not pull a present image; Always does; Never fails on a missing one.
	pulls, _ := f.seen()
	pulled := func() int { n, _ := f.seen(); return n - pulls }
	if _, err := d.ensureImage(ctx, c, setup); err != nil || pulled() != 0 {
		t.Errorf("IfNotPresent with the image: %v, %d pulls", err, pulled())
	}
	always := *c
	always.ImagePullPolicy = v4.PullAlways
	if _, err := d.ensureImage(ctx, &always, setup); err != nil || pulled() != 1 {
		t.Errorf("Always: %v, %d pulls", err, pulled())
	}
	f.setPresent(false)
	never := *c
	never.ImagePullPolicy = v4.PullNever
	if _, err := d.ensureImage(ctx, &never, setup); !errors.Is(err, driver.ErrPull) || !strings.Contains(err.Error(), "imagePullPolicy is Never") || pulled() != 1 {
		t.Errorf("Never without the image: %v, %d pulls", err, pulled())
	}
}

// Without PullAuth the container's own imagePullUser/imagePullPasswd are sent.
func TestPullWithSpecCredentials(t *testing.T) {
	f := &fakeDaemon{want: "pw"}
	d := fakeDriver(t, f, &bytes.Buffer{})
	c := &v4.Container{Image: "r.local:5000/app:1", ImagePullUser: "bob", ImagePullPasswd: "pw"}
	if _, err := d.ensureImage(context.Background(), c, nil); err != nil {
		t.Fatal(err)
	}
	if _, auth := f.seen(); auth["username"] != "bob" || auth["serveraddress"] != "r.local:5000" {
		t.Errorf("the daemon was sent %v", auth["username"])
	}
	// A tag the registry lacks is the registry's answer, not a task that is gone.
	f.setPresent(false)
	_, err := d.ensureImage(context.Background(), &v4.Container{Image: "r.local:5000/app:2"}, nil)
	if !errors.Is(err, driver.ErrPull) || errors.Is(err, driver.ErrNotFound) || !strings.Contains(err.Error(), "pull image r.local:5000/app:2: ") ||
		!strings.Contains(err.Error(), "manifest unknown") {
		t.Errorf("a missing tag: %v", err)
	}
}
