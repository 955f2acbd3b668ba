package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// runtimeDaemon answers what a start with a runtime asks: info with the daemon's
// runtimes, a present image, and the create, whose HostConfig.Runtime it keeps.
type runtimeDaemon struct {
	mu      sync.Mutex
	created string // the last create's HostConfig.Runtime
	creates int
}

func (f *runtimeDaemon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch p := r.URL.Path; {
	case strings.HasSuffix(p, "/_ping"):
		w.Header().Set("Api-Version", "1.41")
	case strings.HasSuffix(p, "/info"):
		// "odd/name" is not a handler's name: no spec can ask for it, so it is not listed.
		fmt.Fprint(w, `{"ID":"x","Runtimes":{"runc":{"path":"runc"},"runsc":{"path":"/usr/local/bin/runsc"},"odd/name":{"path":"x"}},"DefaultRuntime":"runc"}`)
	case strings.Contains(p, "/images/") && strings.HasSuffix(p, "/json"):
		fmt.Fprint(w, `{"Id":"sha256:abc","Config":{}}`)
	case strings.HasSuffix(p, "/containers/json"):
		fmt.Fprint(w, `[]`)
	case strings.Contains(p, "/containers/") && strings.HasSuffix(p, "/json"):
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"message":"No such container"}`)
	case strings.HasSuffix(p, "/containers/create"):
		var body struct{ HostConfig struct{ Runtime string } }
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &body)
		f.mu.Lock()
		f.created, f.creates = body.HostConfig.Runtime, f.creates+1
		f.mu.Unlock()
		fmt.Fprint(w, `{"Id":"0123456789abcdef","Warnings":[]}`)
	default:
		w.WriteHeader(http.StatusNotImplemented)
	}
}

func (f *runtimeDaemon) last() (string, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.created, f.creates
}

// The node reports the daemon's runtimes; a pod's runtime reaches Docker as
// HostConfig.Runtime; one the daemon lacks, or that is not a handler's name, fails the
// start before anything is created.
func TestContainerRuntime(t *testing.T) {
	f := &runtimeDaemon{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	var log bytes.Buffer
	d, err := New(Config{Host: "tcp://" + srv.Listener.Addr().String(), DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	if got, err := d.Runtimes(ctx); err != nil || !slices.Equal(got, []string{"runc", "runsc"}) {
		t.Fatalf("runtimes %v, %v", got, err)
	}
	tk := func(rt string) *driver.Task {
		return &driver.Task{ID: "ns.tg.web", Name: "web", Container: &v4.Container{Name: "web", Image: "app:1", Command: "sleep", Args: []string{"9"}},
			Setup: &driver.ContainerSetup{NetworkMode: "HOST", Runtime: rt}}
	}
	for _, rt := range []string{"runsc", "runc", ""} {
		task := tk(rt)
		if err := d.checkRuntime(ctx, task); err != nil {
			t.Fatalf("%q: %v", rt, err)
		}
		spec, err := d.buildSpec(ctx, task)
		if err != nil {
			t.Fatalf("%q: %v", rt, err)
		}
		if _, err := d.create(ctx, task, spec, d.name(task.ID)); err != nil {
			t.Fatalf("%q: create: %v", rt, err)
		}
		if got, _ := f.last(); got != rt {
			t.Errorf("HostConfig.Runtime %q, want %q", got, rt)
		}
	}
	_, before := f.last()
	for rt, msg := range map[string]string{
		"kata":     `runtime "kata": this node does not offer it (dockerd has runc, runsc)`,
		"odd/name": "not a path",
		"/bin/sh":  "not a path",
		"../x":     "not a path",
	} {
		_, err := d.Start(ctx, tk(rt))
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: %v, want ...%s...", rt, err, msg)
		}
	}
	if _, n := f.last(); n != before {
		t.Errorf("%d containers created for refused runtimes", n-before)
	}
}

// On a real dockerd, runc named explicitly runs the container with runc (its default
// runtime, the one every daemon has), and a runtime it lacks fails before a create.
func TestContainerRuntimeOnDockerd(t *testing.T) {
	d := parallelDriver(t)
	rts, err := d.Runtimes(ctxT(t, 10*time.Second))
	if err != nil || !slices.Contains(rts, "runc") {
		t.Fatalf("runtimes %v, %v", rts, err)
	}
	task := newTask(t, d, "rt", imgPlain, "sleep", "100")
	task.Setup.Runtime = "runc"
	mustStart(t, d, task)
	if hc := rawInspect(t, task.ID).HostConfig; hc == nil || hc.Runtime != "runc" {
		t.Fatalf("HostConfig %+v", hc)
	}
	kata := newTask(t, d, "kata", imgPlain, "sleep", "100")
	kata.Setup.Runtime = "kata"
	if _, err := d.Start(ctxT(t, 30*time.Second), kata); err == nil || !strings.Contains(err.Error(), `runtime "kata": this node does not offer it`) {
		t.Fatalf("kata: %v", err)
	}
	if _, err := rawContainer(context.Background(), containerName(kata.ID)); err == nil {
		t.Error("a container was created for kata")
	}
}
