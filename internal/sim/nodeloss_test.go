package sim

import (
	"context"
	"fmt"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/scheduler/feed"
	"github.com/berthhq/berth/internal/store/storetest"
)

// A frozen simulated node stops beating: the leader marks it Lost after the TTL and its
// instances run again on the other nodes, which NodeLoss measures.
func TestNodeLossReplacesTheFrozenNodesInstances(t *testing.T) {
	const ttl = 2 * time.Second
	url, token, ca := serveTTL(t, ttl)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := feed.New(testStore, storetest.QuietLogger())
	mgr := controller.NewManager(testStore, f, controller.Options{Logger: storetest.QuietLogger(), NodeTTL: ttl}, "nodeloss-test")
	done := make(chan struct{}, 3)
	go func() { f.Run(ctx); done <- struct{}{} }()
	go func() { mgr.Run(ctx); done <- struct{}{} }()
	s, err := New(Config{ServerURLs: []string{url}, Token: token, Nodes: 4, Prefix: "f", DataDir: t.TempDir(),
		HeartbeatInterval: 200 * time.Millisecond, ReportInterval: time.Second,
		MinStartDelay: 10 * time.Millisecond, MaxStartDelay: 50 * time.Millisecond, Logger: storetest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	go func() { s.Run(ctx); done <- struct{}{} }()
	defer func() {
		cancel()
		for range 3 {
			<-done
		}
	}()
	waitFor(t, "every node serving", func() bool { return s.Ready() == 4 })

	sec, err := acl.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if err := testStore.CreateACLToken(ctx, &acl.Token{ID: sec.ID, SecretHash: acl.HashOf(sec), Management: true, Name: "nodeloss", Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(url, client.WithHTTPClient(client.HTTPClient(ca.Pool(), nil)), client.WithBearerToken(sec.String()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Load(ctx, c, LoadConfig{Apps: 2, Instances: 4, Timeout: time.Minute, RestartPolicy: v4.RestartAlways}); err != nil {
		t.Fatal(err)
	}
	freeze := func(node string) error {
		if !s.Freeze(node) {
			return fmt.Errorf("no node %s runs", node)
		}
		return nil
	}
	res, err := NodeLoss(ctx, c, NodeLossConfig{Freeze: freeze, Timeout: time.Minute})
	if err != nil {
		if list, lerr := c.List(ctx, v4.KindTaskGroup, ""); lerr == nil {
			for _, o := range list.Items {
				tg := o.(*v4.TaskGroup)
				t.Logf("%s/%s owner %v index %d node %s phase %s desired %s", tg.Metadata.Namespace, tg.Metadata.Name, tg.Spec.Owner, tg.Spec.Index, tg.Spec.Node, tg.Status.Phase, tg.Spec.Desired)
			}
		}
		t.Fatalf("%v (%v)", err, res)
	}
	if res.Instances == 0 || res.Replaced != res.Instances || res.Lost < ttl-time.Second || res.AllRunning < res.Lost {
		t.Fatalf("result: %+v", res)
	}
	if s.Freeze(res.Node) {
		t.Fatal("a frozen node froze again")
	}
	if _, err := NodeLoss(ctx, c, NodeLossConfig{Node: "f-00404", Freeze: freeze}); err == nil {
		t.Fatal("a node without instances was measured")
	}
}
