package csivolume

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/csi"
	"github.com/berthhq/berth/internal/csi/csitest"
	"github.com/berthhq/berth/internal/mountinfo"
)

// requireRoot skips a test that mounts unless it runs as root; CI runs as root, so
// there a skip would hide a failure.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("the csitest plugin bind-mounts: CI runs as root")
		}
		t.Skip("the csitest plugin bind-mounts: run as root")
	}
}

// testPlugin is a csitest plugin on a unix socket and a client of it.
type testPlugin struct {
	srv    *csitest.Server
	client *csi.Client
	dir    string // a temp dir holding the socket, the plugin's root and the agent's dirs
}

func startPlugin(t *testing.T, opts csitest.Options) *testPlugin {
	t.Helper()
	dir, err := os.MkdirTemp("", "csv") // short: a socket address holds 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	opts.NodeID, opts.Root = "n1", filepath.Join(dir, "plugin")
	sock := filepath.Join(dir, "csi.sock")
	srv, err := csitest.Serve(sock, opts)
	if err != nil {
		t.Fatal(err)
	}
	c, err := csi.New(csitest.DefaultName, sock, csi.Options{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		srv.Close()
		unmountAll(t, dir)
		os.RemoveAll(dir)
	})
	return &testPlugin{srv: srv, client: c, dir: dir}
}

// createVolume makes a volume in the plugin and returns its ID.
func (p *testPlugin) createVolume(t *testing.T, name string) string {
	t.Helper()
	v, err := p.client.CreateVolume(context.Background(), csi.CreateRequest{Name: name,
		Capability: csi.Capability{AccessMode: v4.AccessMultiNodeMultiWriter}})
	if err != nil {
		t.Fatal(err)
	}
	return v.ID
}

// unmountAll undoes whatever a failed test left mounted under dir, deepest first.
func unmountAll(t *testing.T, dir string) {
	for range 32 {
		mps, err := mountinfo.Below(mountTable, dir)
		if err != nil || len(mps) == 0 {
			return
		}
		for i := len(mps) - 1; i >= 0; i-- {
			if err := unix.Unmount(mps[i], unix.MNT_DETACH); err != nil {
				t.Logf("unmount %s: %v", mps[i], err)
			}
		}
	}
}

// plugins is a fixed set of plugins (PluginClients).
type plugins struct {
	mu sync.Mutex
	m  map[string]pluginEntry
}

type pluginEntry struct {
	c    *csi.Client
	info v4.CSIPlugin
}

func (p *plugins) Client(name string) (*csi.Client, v4.CSIPlugin, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.m[name]
	return e.c, e.info, ok
}

func (p *plugins) set(name string, c *csi.Client, healthy bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c == nil {
		delete(p.m, name)
		return
	}
	p.m[name] = pluginEntry{c: c, info: v4.CSIPlugin{Name: name, Node: true, Healthy: healthy, Message: "probe: connection refused"}}
}

// claimServer is the server's claim routes: it grants each volume it knows, refuses the
// others, and records the calls.
type claimServer struct {
	mu     sync.Mutex
	grants map[string]v4.CSIClaimGrant // by namespace/volume
	refuse string                      // answered with 409 to every claim when set
	calls  []string
}

func (s *claimServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req v4.CSIClaimRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	op := strings.TrimPrefix(r.URL.Path, "/v1/agent/volumes/")
	s.calls = append(s.calls, op+" "+req.Namespace+"/"+req.Volume+" "+req.TaskGroup)
	g, ok := s.grants[req.Namespace+"/"+req.Volume]
	switch {
	case op == "release":
		w.WriteHeader(http.StatusNoContent)
	case s.refuse != "":
		http.Error(w, s.refuse, http.StatusConflict)
	case !ok:
		http.Error(w, "no volume "+req.Volume, http.StatusNotFound)
	default:
		_ = json.NewEncoder(w).Encode(g)
	}
}

func (s *claimServer) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// claimsClient is the manager's Claims over the berth client, as the agent has them.
type claimsClient struct{ c *client.Client }

func (c claimsClient) Claim(ctx context.Context, req v4.CSIClaimRequest) (v4.CSIClaimGrant, error) {
	return c.c.AgentClaimVolume(ctx, req)
}

func (c claimsClient) Release(ctx context.Context, req v4.CSIClaimRequest) error {
	return c.c.AgentReleaseVolume(ctx, req)
}

// env is a manager, its claim server and its plugins.
type env struct {
	m       *Manager
	opts    Options
	server  *claimServer
	claims  Claims // the claim server's, through the berth client
	plugins *plugins
	dir     string
}

func newEnv(t *testing.T, dir string) *env {
	t.Helper()
	cs := &claimServer{grants: map[string]v4.CSIClaimGrant{}}
	hs := httptest.NewServer(cs)
	t.Cleanup(hs.Close)
	c, err := client.New(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{server: cs, claims: claimsClient{c}, plugins: &plugins{m: map[string]pluginEntry{}}, dir: dir}
	e.opts = Options{StateDir: filepath.Join(dir, "csi", "state"), StagingDir: filepath.Join(dir, "csi", "staging"),
		Claims: e.claims, Plugins: e.plugins, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
	e.m = e.restart(t)
	return e
}

// restart makes a new manager over the same directories, as an agent's restart does.
func (e *env) restart(t *testing.T) *Manager {
	t.Helper()
	m, err := New(e.opts)
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	return m
}

// target is the pod volume directory of pod's volume name.
func (e *env) target(pod, name string) string {
	return filepath.Join(e.dir, "pods", strings.ReplaceAll(pod, "/", "."), "volumes", name)
}

func grant(id string) v4.CSIClaimGrant {
	return v4.CSIClaimGrant{Plugin: csitest.DefaultName, ExternalID: id, AccessMode: v4.AccessMultiNodeMultiWriter,
		AttachmentMode: v4.AttachFileSystem, Context: map[string]string{"csitest.berth.io/name": "db"}}
}

func isMounted(t *testing.T, dir string) bool {
	t.Helper()
	mps, err := mountinfo.Below(mountTable, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, mp := range mps {
		if mp == dir {
			return true
		}
	}
	return false
}
