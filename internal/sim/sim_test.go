package sim

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/pki"
	"github.com/berthhq/berth/internal/server"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache/cachetest"
	"github.com/berthhq/berth/internal/store/storetest"
)

var testStore *store.Store

func TestMain(m *testing.M) { os.Exit(storetest.Run(m, &testStore)) }

// serve runs a real API server over the test store and returns its URL, a join token
// and the cluster CA.
func serve(t *testing.T) (string, string, *pki.CA) {
	t.Helper()
	return serveTTL(t, 0)
}

// serveTTL is serve with the server's node TTL (0: the default).
func serveTTL(t *testing.T, ttl time.Duration) (string, string, *pki.CA) {
	t.Helper()
	storetest.Reset(t, testStore)
	ca, err := pki.NewCA("sim test CA", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tok := storetest.JoinToken(t, testStore, v4.JoinRoleAgent, time.Time{})
	caches := cachetest.Registry(t, testStore, controller.RegisterCaches)
	srv, err := server.New(server.Config{CA: ca, Logger: storetest.QuietLogger(), NodeTTL: ttl, Caches: caches}, testStore)
	if err != nil {
		t.Fatal(err)
	}
	// The server's own TLS config (httptest's StartTLS would put its own certificate first).
	ts := httptest.NewUnstartedServer(srv.Handler())
	l := ts.Listener
	ts.Listener = tls.NewListener(l, srv.TLSConfig())
	ts.Start()
	t.Cleanup(func() { srv.Close(); ts.CloseClientConnections(); ts.Close() })
	return "https://" + l.Addr().String(), tok.WithPin(ca.Hash()), ca
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Simulated nodes join, register, heartbeat (their leases live) and run the task groups
// bound to them through the agent's real paths, reporting them Running.
func TestSimulatedNodesRunTaskGroups(t *testing.T) {
	url, token, _ := serve(t)
	const nodes = 20
	s, err := New(Config{ServerURLs: []string{url}, Token: token, Nodes: nodes, Prefix: "t", DataDir: t.TempDir(),
		Ramp: 200 * time.Millisecond, HeartbeatInterval: 200 * time.Millisecond, ReportInterval: time.Second,
		MinStartDelay: 10 * time.Millisecond, MaxStartDelay: 50 * time.Millisecond, Logger: storetest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	nodeStore := store.Typed[*v4.Node](testStore, v4.KindNode)
	waitFor(t, "every node Ready and alive", func() bool {
		if s.Ready() != nodes { // counted as each node's Ready closes, a goroutine each
			return false
		}
		list, _, err := nodeStore.List(context.Background(), "")
		alive, aerr := testStore.AliveNodes(context.Background())
		if err != nil || aerr != nil || len(list) != nodes || len(alive) != nodes {
			return false
		}
		for _, n := range list {
			if n.Status.Phase != v4.NodeReady {
				return false
			}
		}
		return true
	})
	if s.Ready() != nodes || s.Failed() != 0 {
		t.Fatalf("ready %d, failed %d", s.Ready(), s.Failed())
	}

	tgStore := store.Typed[*v4.TaskGroup](testStore, v4.KindTaskGroup)
	for i := range 2 * nodes {
		tg := &v4.TaskGroup{
			TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindTaskGroup},
			Metadata: v4.ObjectMeta{Namespace: "sim", Name: fmt.Sprintf("%d.web.sim.c.1", i)},
			Spec: v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindProcess, Name: "web"}, Index: i, Node: fmt.Sprintf("t-%05d", i%nodes),
				Template: v4.PodTemplate{Spec: v4.PodSpec{Processes: []v4.ProcessTask{{ProcName: "web", StartCmd: "./web", StartGracePeriod: 1}}}}},
		}
		if err := tgStore.Create(context.Background(), tg, store.Raw{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every task group Running", func() bool {
		list, _, err := tgStore.List(context.Background(), "sim")
		if err != nil {
			return false
		}
		running := 0
		for _, tg := range list {
			if tg.Status.Phase == v4.StatusRunning {
				running++
			}
		}
		return running == 2*nodes
	})
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Nodes: 0, DataDir: "/x", ServerURLs: []string{"https://a"}}, "nodes 0"},
		{Config{Nodes: MaxNodes + 1, DataDir: "/x", ServerURLs: []string{"https://a"}}, "nodes"},
		{Config{Nodes: 1, ServerURLs: []string{"https://a"}}, "data directory"},
		{Config{Nodes: 1, DataDir: "/x"}, "server"},
		{Config{Nodes: 1, DataDir: "/x", ServerURLs: []string{"https://a"}, MinStartDelay: time.Second, MaxStartDelay: time.Millisecond}, "start delay"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

// Light nodes with a run time end their task groups with the drawn exit codes (Finish
// for 0, Failed otherwise), and report a task group the server stops Killed.
func TestLightNodesExitWithCodes(t *testing.T) {
	url, token, _ := serve(t)
	const nodes, groups = 4, 12
	s, err := New(Config{ServerURLs: []string{url}, Token: token, Nodes: nodes, Prefix: "x", DataDir: t.TempDir(),
		HeartbeatInterval: 200 * time.Millisecond, MinStartDelay: 10 * time.Millisecond, MaxStartDelay: 30 * time.Millisecond,
		RunTime: 50 * time.Millisecond, ExitCodes: []ExitCode{{Code: 0, Weight: 1}, {Code: 3, Weight: 1}}, Logger: storetest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "every node alive", func() bool {
		alive, err := testStore.AliveNodes(context.Background())
		return err == nil && len(alive) == nodes
	})
	tgStore := store.Typed[*v4.TaskGroup](testStore, v4.KindTaskGroup)
	for i := range groups {
		tg := &v4.TaskGroup{
			TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindTaskGroup},
			Metadata: v4.ObjectMeta{Namespace: "sim", Name: fmt.Sprintf("%d.job.sim.c.1", i)},
			Spec: v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindProcess, Name: "job"}, Index: i, Node: fmt.Sprintf("x-%05d", i%nodes),
				Template: v4.PodTemplate{Spec: v4.PodSpec{Processes: []v4.ProcessTask{{ProcName: "job", StartCmd: "./job"}}}}},
		}
		if err := tgStore.Create(context.Background(), tg, store.Raw{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every task group ended", func() bool {
		list, _, err := tgStore.List(context.Background(), "sim")
		if err != nil || len(list) != groups {
			return false
		}
		for _, tg := range list {
			if tg.Status.Phase != v4.StatusFinish && tg.Status.Phase != v4.StatusFailed {
				return false
			}
		}
		return true
	})
	list, _, _ := tgStore.List(context.Background(), "sim")
	for _, tg := range list {
		want := map[string]int{v4.StatusFinish: 0, v4.StatusFailed: 3}[tg.Status.Phase]
		if len(tg.Status.Tasks) != 1 || tg.Status.Tasks[0].Info.ExitCode != want || tg.Status.HostIP == "" {
			t.Errorf("%s: %s with %+v", tg.Metadata.Name, tg.Status.Phase, tg.Status.Tasks)
		}
	}
}

func TestParseExitCodes(t *testing.T) {
	codes, err := ParseExitCodes("0:90, 1:9,137:1")
	if err != nil || len(codes) != 3 || codes[2] != (ExitCode{137, 1}) {
		t.Fatalf("%v %v", codes, err)
	}
	for _, bad := range []string{"", "x", "0:", ":1", "-1:1", "0:-1", "0:1,0:2", "0:1000001"} {
		if _, err := ParseExitCodes(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	seen := map[int]bool{}
	for range 200 {
		seen[drawExitCode([]ExitCode{{0, 1}, {5, 1}})] = true
	}
	if !seen[0] || !seen[5] || len(seen) != 2 || drawExitCode(nil) != 0 {
		t.Errorf("drawn %v", seen)
	}
}

// A light node reports every task of a task group Running, and the task group Killed
// once the server wants it stopped.
func TestLightNodesStopTaskGroups(t *testing.T) {
	url, token, _ := serve(t)
	s, err := New(Config{ServerURLs: []string{url}, Token: token, Nodes: 1, Prefix: "k", DataDir: t.TempDir(),
		HeartbeatInterval: 200 * time.Millisecond, Logger: storetest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "the node alive", func() bool {
		alive, err := testStore.AliveNodes(context.Background())
		return err == nil && len(alive) == 1
	})
	tgStore := store.Typed[*v4.TaskGroup](testStore, v4.KindTaskGroup)
	tg := &v4.TaskGroup{
		TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindTaskGroup},
		Metadata: v4.ObjectMeta{Namespace: "sim", Name: "0.web.sim.c.1"},
		Spec: v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindProcess, Name: "web"}, Node: "k-00000",
			Template: v4.PodTemplate{Spec: v4.PodSpec{Processes: []v4.ProcessTask{{ProcName: "web", StartCmd: "./web"}, {ProcName: "side", StartCmd: "./side"}}}}},
	}
	if err := tgStore.Create(context.Background(), tg, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	phase := func(want string) func() bool {
		return func() bool {
			got, err := tgStore.Get(context.Background(), "sim", tg.Metadata.Name)
			return err == nil && got.Status.Phase == want
		}
	}
	waitFor(t, "Running", phase(v4.StatusRunning))
	got, err := tgStore.Get(context.Background(), "sim", tg.Metadata.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Tasks) != 2 || got.Status.Tasks[1].Name != "side" || got.Status.Tasks[1].Status != v4.StatusRunning {
		t.Fatalf("tasks %+v", got.Status.Tasks)
	}
	got.Spec.Desired = v4.DesiredStopped
	if err := tgStore.Update(context.Background(), got, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Killed", phase(v4.StatusKilled))
}
