package daemon

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/store/storetest"
)

// runningServer is a `berth server` a test runs with RunServer over its own data dir.
type runningServer struct {
	base   string
	http   *http.Client // trusts the cluster CA
	admin  string       // the management token of the data dir
	client *client.Client
	done   <-chan error // RunServer's result
}

// startServer runs the server as `berth server` does, over data dir dir, until ctx ends,
// and returns it once it is ready.
func startServer(t *testing.T, ctx context.Context, dir string) *runningServer {
	t.Helper()
	ready := make(chan string, 1)
	result := make(chan error, 1)
	go func() {
		cfg := ServerConfig{DataDir: dir, OnReady: func(addr string) { ready <- addr }}
		cfg.API.Listen, cfg.API.Logger = "127.0.0.1:0", storetest.QuietLogger()
		result <- RunServer(ctx, cfg)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-result:
		t.Fatalf("RunServer: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("not ready within 60s")
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatalf("no certificate in %s", CAFile)
	}
	admin, err := os.ReadFile(filepath.Join(dir, AdminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	s := &runningServer{base: "https://" + addr, http: client.HTTPClient(roots, nil), admin: strings.TrimSpace(string(admin)), done: result}
	if s.client, err = client.New(s.base, client.WithHTTPClient(s.http), client.WithBearerToken(s.admin)); err != nil {
		t.Fatal(err)
	}
	return s
}

// cachedKinds are the kinds a leading server caches: what the scheduler's feed, the
// controllers and the agents' routes read (docs/store.md, "Shared cache").
var cachedKinds = []v4.Kind{v4.KindTaskGroup, v4.KindNode, v4.KindApplication, v4.KindProcess, v4.KindDeployment,
	v4.KindDaemonset, v4.KindDependency, v4.KindService, v4.KindEndpoint, v4.KindNotify, v4.KindVolume, v4.KindJob,
	v4.KindCronJob, v4.KindCronWorkflow, v4.KindWorkflow}

// A server run as `berth server` runs it serves the API, holds, once it leads and its
// controllers run, exactly one etcd watch per kind it caches, whoever reads the kind, and
// none of the others (berth_store_watches), and stops promptly when its context ends,
// even with a watch stream open.
func TestRunServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := startServer(t, ctx, t.TempDir())

	want := map[string]int{}
	for _, k := range cachedKinds {
		want[string(k)] = 1
	}
	var got map[string]int
	for deadline := time.Now().Add(30 * time.Second); !maps.Equal(got, want); time.Sleep(100 * time.Millisecond) {
		if got = s.storeWatches(t); time.Now().After(deadline) {
			t.Fatalf("store watches %v, want one of each of %v", got, slices.Sorted(maps.Keys(want)))
		}
	}
	time.Sleep(time.Second) // every controller runs by now: none opens a watch of its own
	if got = s.storeWatches(t); !maps.Equal(got, want) {
		t.Fatalf("store watches %v once the controllers run, want one of each of %v", got, slices.Sorted(maps.Keys(want)))
	}

	cm := &v4.ConfigMap{TypeMeta: v4.TypeMeta{APIVersion: "v4", Kind: v4.KindConfigMap},
		Metadata: v4.ObjectMeta{Namespace: "run", Name: "cfg"}, Datas: map[string]v4.ConfigMapData{"a": {Type: "file", Content: "eA=="}}}
	if _, err := s.client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	events, err := s.client.Watch(ctx, v4.KindConfigMap, "run", "")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		if ev.Err != nil || ev.Type != "ADDED" || ev.Object.GetMeta().Name != "cfg" {
			t.Fatalf("first watch event %s %v (%v), want ADDED cfg", ev.Type, ev.Object, ev.Err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event within 10s")
	}
	// An open watch must not hold up the shutdown.
	cancel()
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("RunServer returned %v", err)
		}
	case <-time.After(4 * time.Second):
		t.Fatal("RunServer did not stop within 4s")
	}
}

var storeWatchesLine = regexp.MustCompile(`(?m)^berth_store_watches\{kind="([^"]+)"\} (\d+)$`)

// storeWatches reads berth_store_watches from the server's metrics, by kind.
func (s *runningServer) storeWatches(t *testing.T) map[string]int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.admin)
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("metrics: %d %v", resp.StatusCode, err)
	}
	out := map[string]int{}
	for _, m := range storeWatchesLine.FindAllStringSubmatch(string(body), -1) {
		n, err := strconv.Atoi(m[2])
		if err != nil {
			t.Fatal(fmt.Errorf("berth_store_watches of %s: %w", m[1], err))
		}
		out[m[1]] = n
	}
	return out
}
