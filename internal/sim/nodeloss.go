package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/agentapi"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/controller"
)

// NodeLossConfig is one node-loss measurement (NodeLoss).
type NodeLossConfig struct {
	// Node is the simulated node to freeze ("": the one that runs the most instances);
	// Freeze freezes it (its agent stops at once, as if its machine died: no beat, no
	// report, nothing said to the server) and says when its last beat left and the
	// interval its server had told it.
	Node   string
	Freeze func(node string) (FrozenNode, error)
	// NodeTTL is the server's --node-ttl (default the server's): with the interval the
	// server told the node, it gives the node's TTL as the server computes it.
	NodeTTL time.Duration
	// MaxAfterTTL, when set, bounds the time from the TTL's expiry to the last
	// replacement Running: a run over it fails.
	MaxAfterTTL time.Duration
	// Timeout bounds the wait for the replacements (default 5 minutes).
	Timeout time.Duration
}

// NodeLossResult is what NodeLoss measured.
type NodeLossResult struct {
	Node       string
	Instances  int           // Running instances on the node when it froze
	Lost       time.Duration // freeze -> the node marked Lost
	Replaced   int           // instances with a Running replacement on another node
	AllRunning time.Duration // freeze -> the last replacement Running
	// Interval is the heartbeat interval the server told the node (0: none, it beat at
	// its own); TTL the node's TTL that follows from it; Expired when that TTL ran out,
	// from the freeze (its last beat came before the freeze: less than TTL);
	// AfterTTL = AllRunning - Expired, what the cluster took once the node was silent
	// for its TTL.
	Interval, TTL, Expired, AfterTTL time.Duration
}

func (r *NodeLossResult) String() string {
	told := "the server told it no interval: it beat at its own"
	if r.Interval > 0 {
		told = "of the interval the server told it, " + r.Interval.String()
	}
	return fmt.Sprintf("node %s froze with %d Running instances: marked Lost after %s; %d of them Running elsewhere after %s\n"+
		"its TTL %s (%s) expired %s after the freeze: replaced %s after the TTL",
		r.Node, r.Instances, r.Lost.Round(time.Millisecond), r.Replaced, r.AllRunning.Round(time.Millisecond),
		r.TTL, told, r.Expired.Round(time.Millisecond), r.AfterTTL.Round(time.Millisecond))
}

// Fields are the figures of r as key=value pairs on one line (LoadResult.Fields).
func (r *NodeLossResult) Fields() string {
	return fmt.Sprintf("node=%s instances=%d replaced=%d lost_after_s=%.2f replaced_after_s=%.2f ttl_s=%.0f interval_s=%.0f after_ttl_s=%.2f",
		r.Node, r.Instances, r.Replaced, r.Lost.Seconds(), r.AllRunning.Seconds(), r.TTL.Seconds(), r.Interval.Seconds(), r.AfterTTL.Seconds())
}

// nodeTTL is the TTL the server gives a node it told to beat every interval (0: none, at
// the floor), as the server computes it (agentapi.Pace): the upper end of the interval's
// range, which a lease is given when it is granted or moved.
func nodeTTL(serverTTL, interval time.Duration) time.Duration {
	p := agentapi.Pace{Floor: v4.MinHeartbeatInterval, Ceiling: v4.MaxHeartbeatInterval, NodeTTL: serverTTL}
	_, hi := p.TTLs(interval)
	return hi
}

// expiry places the TTL's expiry from the freeze at start: TTL after the node's last
// beat (after start when it is not known), and sets AfterTTL from AllRunning.
func (r *NodeLossResult) expiry(start time.Time, fn FrozenNode, serverTTL time.Duration) {
	r.Interval, r.TTL = fn.Interval, nodeTTL(serverTTL, fn.Interval)
	// A beat may leave after start, before the simulator saw the freeze: the TTL then
	// expires later than TTL after start.
	last := fn.LastBeat
	if last.IsZero() {
		last = start
	}
	r.Expired = last.Add(r.TTL).Sub(start)
	r.AfterTTL = r.AllRunning - r.Expired
}

// instanceKey names one instance of a workload: its owner and index, whichever task
// group runs it.
type instanceKey struct {
	ns    string
	owner v4.OwnerRef
	index int
}

func instanceOf(tg *v4.TaskGroup) instanceKey {
	return instanceKey{ns: tg.Metadata.Namespace, owner: tg.Spec.Owner, index: tg.Spec.Index}
}

// NodeLoss freezes a node that runs instances and measures until each of them runs on
// another node: the time the cluster takes to notice a dead machine and replace its work.
func NodeLoss(ctx context.Context, c *client.Client, cfg NodeLossConfig) (*NodeLossResult, error) {
	if cfg.Freeze == nil {
		return nil, errors.New("node loss: no way to freeze a node")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Minute
	}
	if cfg.NodeTTL <= 0 {
		cfg.NodeTTL = controller.DefaultNodeTTL
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	list, err := c.List(ctx, v4.KindTaskGroup, "")
	if err != nil {
		return nil, fmt.Errorf("node loss: list task groups: %w", err)
	}
	var lost map[instanceKey]bool
	cfg.Node, lost = nodeToFreeze(list.Items, cfg.Node)
	res := &NodeLossResult{Node: cfg.Node, Instances: len(lost)}
	if len(lost) == 0 {
		return res, fmt.Errorf("node loss: node %s runs no instance", cfg.Node)
	}
	tgs, err := c.Watch(ctx, v4.KindTaskGroup, "", list.ResourceVersion)
	if err != nil {
		return nil, fmt.Errorf("node loss: watch task groups: %w", err)
	}
	nodes, err := c.WatchNodes(ctx, list.ResourceVersion)
	if err != nil {
		return nil, fmt.Errorf("node loss: watch nodes: %w", err)
	}
	start := time.Now()
	frozen, err := cfg.Freeze(cfg.Node)
	if err != nil {
		return nil, fmt.Errorf("node loss: freeze %s: %w", cfg.Node, err)
	}
	for res.Replaced < res.Instances || res.Lost == 0 {
		select {
		case ev, ok := <-tgs:
			if !ok {
				return res, fmt.Errorf("node loss: the task group watch ended: %d of %d replaced", res.Replaced, res.Instances)
			}
			tg, isTG := ev.Object.(*v4.TaskGroup)
			if !isTG || ev.Type == "DELETED" || tg.Spec.Node == cfg.Node || tg.Status.Phase != v4.StatusRunning {
				continue
			}
			if k := instanceOf(tg); lost[k] {
				delete(lost, k)
				res.Replaced++
				res.AllRunning = time.Since(start)
			}
		case ev, ok := <-nodes:
			if !ok {
				return res, errors.New("node loss: the node watch ended")
			}
			if n, isNode := ev.Object.(*v4.Node); isNode && n.Metadata.Name == cfg.Node && n.Status.Phase == v4.NodeLost && res.Lost == 0 {
				res.Lost = time.Since(start)
			}
		case <-ctx.Done():
			return res, fmt.Errorf("node loss: %d of %d instances replaced after %s", res.Replaced, res.Instances, cfg.Timeout)
		}
	}
	res.expiry(start, frozen, cfg.NodeTTL)
	if cfg.MaxAfterTTL > 0 && res.AfterTTL > cfg.MaxAfterTTL {
		return res, fmt.Errorf("node loss: the replacements ran %s after the node's TTL expired, over the bound of %s",
			res.AfterTTL.Round(time.Millisecond), cfg.MaxAfterTTL)
	}
	return res, nil
}

// nodeToFreeze returns node, or when empty the node running the most instances (the
// first by name of those), and the instances it runs.
func nodeToFreeze(tgs []v4.Object, node string) (string, map[instanceKey]bool) {
	running := map[string][]instanceKey{} // node -> its Running instances
	for _, o := range tgs {
		if tg := o.(*v4.TaskGroup); tg.Status.Phase == v4.StatusRunning && tg.Spec.Desired != v4.DesiredStopped {
			running[tg.Spec.Node] = append(running[tg.Spec.Node], instanceOf(tg))
		}
	}
	if node == "" {
		for n, keys := range running {
			if len(keys) > len(running[node]) || len(keys) == len(running[node]) && n < node {
				node = n
			}
		}
	}
	lost := map[instanceKey]bool{}
	for _, k := range running[node] {
		lost[k] = true
	}
	return node, lost
}
