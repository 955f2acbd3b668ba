package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/scheduler/feed"
	"github.com/berthhq/berth/internal/store/cache/cachetest"
	"github.com/berthhq/berth/internal/store/storetest"
)

// simCluster is a real API server over the test store with the leader's controllers, and
// nodes simulated nodes serving, named PREFIX-00000...; it returns the simulation, a
// management client and a context that the test's cleanup ends (and waits for). Each test
// takes its own prefix: the store's tests share one process, and a server remembers the
// node leases it renewed across a wipe of etcd.
func simCluster(t *testing.T, prefix string, nodes int, ttl time.Duration) (*Sim, *client.Client, context.Context) {
	t.Helper()
	url, token, ca := serveTTL(t, ttl)
	ctx, cancel := context.WithCancel(context.Background())
	caches := cachetest.Registry(t, testStore, controller.RegisterCaches)
	f := feed.New(caches, storetest.QuietLogger())
	mgr := controller.NewManager(testStore, f, controller.Options{Logger: storetest.QuietLogger(), NodeTTL: ttl, Caches: caches}, "sim-test")
	done := make(chan struct{}, 3)
	go func() { f.Run(ctx); done <- struct{}{} }()
	go func() { mgr.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() {
		cancel()
		for range 3 {
			<-done
		}
	})
	s, err := New(Config{ServerURLs: []string{url}, Token: token, Nodes: nodes, Prefix: prefix, DataDir: t.TempDir(),
		HeartbeatInterval: 200 * time.Millisecond, ReportInterval: time.Second,
		MinStartDelay: 10 * time.Millisecond, MaxStartDelay: 50 * time.Millisecond, Logger: storetest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	go func() { s.Run(ctx); done <- struct{}{} }()
	waitFor(t, "every node serving", func() bool { return s.Ready() == nodes })

	sec, err := acl.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if err := testStore.CreateACLToken(ctx, &acl.Token{ID: sec.ID, SecretHash: acl.HashOf(sec), Management: true, Name: "sim", Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(url, client.WithHTTPClient(client.HTTPClient(ca.Pool(), nil)), client.WithBearerToken(sec.String()))
	if err != nil {
		t.Fatal(err)
	}
	return s, c, ctx
}

// A burst submitted through the API is placed by the leader's controllers and run by the
// simulated nodes; Load measures every instance from submission to Running.
func TestLoadRunsEveryInstance(t *testing.T) {
	_, c, ctx := simCluster(t, "l", 5, 0)
	res, err := Load(ctx, c, LoadConfig{Apps: 3, Instances: 4, Namespaces: 2, Timeout: time.Minute, ProbeEvery: 20 * time.Millisecond})
	if err != nil {
		procs, _, _ := testStore.List(ctx, v4.KindProcess, "")
		for _, p := range procs {
			t.Logf("%s/%s: %+v", p.GetMeta().Namespace, p.GetMeta().Name, p.(*v4.Process).Status)
		}
		t.Fatalf("%v (%v)", err, res)
	}
	if res.Placed != 12 || res.Running != 12 || res.PlacementsPerSec <= 0 || res.RunningP50 <= 0 || res.RunningP99 < res.RunningP50 ||
		res.Applies != 3 || res.ApplyErrs != 0 || res.Gets == 0 || res.GetErrs != 0 ||
		res.Check == nil || !res.Check.OK() || res.Check.Expected != 12 || len(res.LostNodes) != 0 {
		t.Fatalf("result: %+v", res)
	}
	if _, err := Load(ctx, c, LoadConfig{Apps: 1, Instances: MaxLoadInstances + 1}); err == nil {
		t.Fatal("a burst beyond the bound was accepted")
	}
}

// A load that cannot run is refused before anything is applied, naming what is wrong.
func TestLoadRefusesBadConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  LoadConfig
		want string
	}{
		{LoadConfig{Apps: 0, Instances: 1}, "at least one of each"},
		{LoadConfig{Apps: 1, Instances: 1, Pace: -time.Second}, "pace -1s is negative"},
		{LoadConfig{Apps: 1, Instances: 1, Namespaces: -1}, "namespaces -1 is negative"},
		{LoadConfig{Apps: 1, Instances: 1, Prefix: "at-rest"}, `prefix "at-rest"`},
		{LoadConfig{Apps: 1, Instances: 1, Prefix: "Rest"}, `prefix "Rest"`},
	} {
		_, err := Load(context.Background(), nil, tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%+v) = %v, want an error with %q", tc.cfg, err, tc.want)
		}
	}
}
