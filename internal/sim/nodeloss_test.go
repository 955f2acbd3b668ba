package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// A frozen simulated node stops beating: the leader marks it Lost after the TTL and its
// instances run again on the other nodes, which NodeLoss measures.
func TestNodeLossReplacesTheFrozenNodesInstances(t *testing.T) {
	const ttl = 2 * time.Second
	s, c, ctx := simCluster(t, "f", 4, ttl)
	if _, err := Load(ctx, c, LoadConfig{Apps: 2, Instances: 4, Timeout: time.Minute, RestartPolicy: v4.RestartAlways}); err != nil {
		t.Fatal(err)
	}
	freeze := func(node string) (FrozenNode, error) {
		fn, ok := s.FreezeNode(node)
		if !ok {
			return fn, fmt.Errorf("no node %s runs", node)
		}
		return fn, nil
	}
	res, err := NodeLoss(ctx, c, NodeLossConfig{Freeze: freeze, NodeTTL: ttl, Timeout: time.Minute})
	if err != nil {
		if list, lerr := c.List(ctx, v4.KindTaskGroup, ""); lerr == nil {
			for _, o := range list.Items {
				tg := o.(*v4.TaskGroup)
				t.Logf("%s/%s owner %v index %d node %s phase %s desired %s", tg.Metadata.Namespace, tg.Metadata.Name, tg.Spec.Owner, tg.Spec.Index, tg.Spec.Node, tg.Status.Phase, tg.Spec.Desired)
			}
		}
		t.Fatalf("%v (%v)", err, res)
	}
	if res.Instances == 0 || res.Replaced != res.Instances || res.Lost < ttl-time.Second || res.AllRunning < res.Lost ||
		res.TTL != ttl || res.Expired > ttl || res.AfterTTL != res.AllRunning-res.Expired {
		t.Fatalf("result: %+v", res)
	}
	// The cluster then holds every instance once, Running, and the simulator runs as
	// many as the server has Running: the frozen node and its Lost task groups aside.
	st := s.Stats()
	if len(st.Frozen) != 1 || st.Frozen[0].Node != res.Node || st.Frozen[0].LastBeat.IsZero() {
		t.Fatalf("stats: %+v", st)
	}
	check, err := Check(ctx, c, CheckConfig{Stats: func() (Stats, error) { return s.Stats(), nil }, Settle: 20 * time.Second})
	if err != nil {
		t.Fatalf("%v (%v)", err, check)
	}
	if check.Instances.Expected != 8 || check.ServerRunning != 8 || check.SimRunning != 8 || len(check.LostNodes) != 0 {
		t.Fatalf("check: %+v, instances %+v", check, check.Instances)
	}
	// A simulator that runs one more than the server has Running: a report lost.
	more := func() (Stats, error) { st := s.Stats(); st.Running++; return st, nil }
	if _, err := Check(ctx, c, CheckConfig{Stats: more, Settle: time.Second}); err == nil || !strings.Contains(err.Error(), "the simulators run 9") {
		t.Fatalf("a lost report passed the check: %v", err)
	}
	if s.Freeze(res.Node) {
		t.Fatal("a frozen node froze again")
	}
	if _, err := NodeLoss(ctx, c, NodeLossConfig{Node: "f-00404", Freeze: freeze}); err == nil {
		t.Fatal("a node without instances was measured")
	}
}
