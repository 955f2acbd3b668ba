package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/fake"
	"github.com/berthhq/berth/internal/executor"
	"github.com/berthhq/berth/internal/pki"
	"github.com/berthhq/berth/internal/server"
	"github.com/berthhq/berth/internal/shim"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache/cachetest"
	"github.com/berthhq/berth/internal/store/storetest"
)

var testStore *store.Store

func TestMain(m *testing.M) {
	shim.RunIfCalled() // the process driver starts this test binary as its tasks' shim
	os.Exit(storetest.Run(m, &testStore))
}

const (
	testNode = "node-1"
	testNS   = "ns-a"
)

// cluster is a real API server over the test store, on an address that stays the same
// when the server is taken down and brought back (down closes the listener: connections
// are refused, as with a dead server).
type cluster struct {
	t    *testing.T
	addr string
	// ca is the cluster's CA; token a join token with its hash, as agents are given it.
	ca    *pki.CA
	token string
	// admin is a management token, for the tests' own calls as a user.
	admin string

	mu  sync.Mutex
	srv *server.Server
	ts  *httptest.Server
	// seen, when set, is shown every request before the server serves it.
	seen atomic.Pointer[func(*http.Request)]
	// open counts the server's connections now open (TLS or not yet), across restarts.
	open atomic.Int64
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	storetest.Reset(t, testStore)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, addr: l.Addr().String()}
	if c.ca, err = pki.NewCA("agent test CA", time.Now()); err != nil {
		t.Fatal(err)
	}
	c.token = storetest.JoinToken(t, testStore, v4.JoinRoleAgent, time.Time{}).WithPin(c.ca.Hash())
	admin, err := acl.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if err := testStore.CreateACLToken(context.Background(), &acl.Token{ID: admin.ID, SecretHash: acl.HashOf(admin), Management: true, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	c.admin = admin.String()
	c.serve(l)
	t.Cleanup(c.down)
	return c
}

func (c *cluster) url() string { return "https://" + c.addr }

// client is a user's client of the cluster.
func (c *cluster) client() *client.Client {
	c.t.Helper()
	cl, err := client.New(c.url(), client.WithHTTPClient(client.HTTPClient(c.ca.Pool(), nil)), client.WithBearerToken(c.admin))
	if err != nil {
		c.t.Fatal(err)
	}
	return cl
}

func (c *cluster) serve(l net.Listener) {
	srv, err := server.New(server.Config{CA: c.ca, Logger: storetest.QuietLogger(),
		Caches: cachetest.Registry(c.t, testStore, controller.RegisterCaches)}, testStore)
	if err != nil {
		c.t.Fatal(err)
	}
	h := srv.Handler()
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen := c.seen.Load(); seen != nil {
			(*seen)(r)
		}
		h.ServeHTTP(w, r)
	}))
	ts.Listener.Close()
	ts.Listener = tls.NewListener(l, srv.TLSConfig())
	ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			c.open.Add(1)
		case http.StateClosed, http.StateHijacked:
			c.open.Add(-1)
		}
	}
	ts.Start()
	c.mu.Lock()
	c.srv, c.ts = srv, ts
	c.mu.Unlock()
}

// down stops the server: watch streams end and new connections are refused.
func (c *cluster) down() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ts == nil {
		return
	}
	c.srv.Close()
	c.ts.CloseClientConnections()
	c.ts.Close()
	c.srv, c.ts = nil, nil
}

// up serves again on the same address.
func (c *cluster) up() {
	c.t.Helper()
	var l net.Listener
	var err error
	for range 50 { // the port may linger for a moment
		if l, err = net.Listen("tcp", c.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		c.t.Fatal(err)
	}
	c.serve(l)
}

// runningAgent is an agent whose Run goroutine the test owns.
type runningAgent struct {
	a      *Agent
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// startAgent runs an agent of testNode on dir with the fake process driver drv.
func startAgent(t *testing.T, c *cluster, dir string, drv *fake.Driver, mod ...func(*Config)) *runningAgent {
	t.Helper()
	cfg := Config{
		ServerURLs: []string{c.url()}, Token: c.token, NodeName: testNode, IP: "127.0.0.1",
		DataDir: dir, Listen: "127.0.0.1:0",
		Labels:            map[string]string{"zone": "z1"},
		Attributes:        v4.NodeAttributes{Text: map[string]string{"rack": "r1"}},
		HeartbeatInterval: 50 * time.Millisecond, ReportInterval: 200 * time.Millisecond,
		Drivers: map[string]driver.Driver{"process": drv},
		TuneExecutor: func(ec *executor.Config) {
			ec.PollInterval = 5 * time.Millisecond
			ec.ForceGrace = 100 * time.Millisecond
		},
		Logger: storetest.QuietLogger(),
	}
	for _, m := range mod {
		m(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ra := &runningAgent{a: a, cancel: cancel, done: make(chan error, 1)}
	go func() { ra.done <- a.Run(ctx) }()
	t.Cleanup(ra.stop)
	return ra
}

// stop ends Run and waits for it; later calls do nothing.
func (ra *runningAgent) stop() {
	ra.once.Do(func() {
		ra.cancel()
		select {
		case err := <-ra.done:
			if err != nil {
				panic("agent Run: " + err.Error())
			}
		case <-time.After(20 * time.Second):
			// Every goroutine's stack says what Run waits for.
			buf := make([]byte, 1<<22)
			os.Stderr.Write(buf[:runtime.Stack(buf, true)])
			panic("agent Run did not return within 20s")
		}
	})
}

// processTG is a task group of one process, bound to testNode.
func processTG(name string) *v4.TaskGroup {
	return &v4.TaskGroup{
		TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindTaskGroup},
		Metadata: v4.ObjectMeta{Namespace: testNS, Name: name},
		Spec: v4.TaskGroupSpec{
			Owner: v4.OwnerRef{Kind: v4.KindProcess, Name: "web"}, Node: testNode, KillGracePeriod: 1,
			Template: v4.PodTemplate{Spec: v4.PodSpec{Processes: []v4.ProcessTask{{ProcName: "web", StartCmd: "./web", StartGracePeriod: 1}}}},
		},
	}
}

func tgs() store.TypedStore[*v4.TaskGroup] {
	return store.Typed[*v4.TaskGroup](testStore, v4.KindTaskGroup)
}

func createTG(t *testing.T, tg *v4.TaskGroup) {
	t.Helper()
	if err := tgs().Create(context.Background(), tg, store.Raw{}); err != nil {
		t.Fatal(err)
	}
}

// runProcessTGs creates a process task group (processTG) for each name and waits until
// every one of them runs.
func runProcessTGs(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		createTG(t, processTG(n))
	}
	for _, n := range names {
		waitPhase(t, n, v4.StatusRunning)
	}
}

// editTG changes a stored task group (as a controller would), retrying lost races with
// the agent's status writes.
func editTG(t *testing.T, name string, edit func(*v4.TaskGroup)) {
	t.Helper()
	for range 20 {
		tg, err := tgs().Get(context.Background(), testNS, name)
		if err != nil {
			t.Fatal(err)
		}
		edit(tg)
		err = tgs().Update(context.Background(), tg, store.Raw{})
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatal("could not edit the task group")
}

// waitFor polls cond for up to 15 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// waitPhase waits until the stored task group has phase and returns it.
func waitPhase(t *testing.T, name, phase string) *v4.TaskGroup {
	t.Helper()
	var tg *v4.TaskGroup
	waitFor(t, name+" "+phase+" in the store", func() bool {
		var err error
		tg, err = tgs().Get(context.Background(), testNS, name)
		return err == nil && tg.Status.Phase == phase
	})
	return tg
}

func taskID(name string) string { return executor.TaskID(testNS, name, "web") }
