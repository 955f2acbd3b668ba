package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// NodeLossConfig is one node-loss measurement (NodeLoss).
type NodeLossConfig struct {
	// Node is the simulated node to freeze ("": the one that runs the most instances);
	// Freeze freezes it (its agent stops at once, as if its machine died: no beat, no
	// report, nothing said to the server).
	Node   string
	Freeze func(node string) error
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
}

func (r *NodeLossResult) String() string {
	return fmt.Sprintf("node %s froze with %d Running instances: marked Lost after %s; %d of them Running elsewhere after %s",
		r.Node, r.Instances, r.Lost.Round(time.Millisecond), r.Replaced, r.AllRunning.Round(time.Millisecond))
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
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	list, err := c.List(ctx, v4.KindTaskGroup, "")
	if err != nil {
		return nil, fmt.Errorf("node loss: list task groups: %w", err)
	}
	running := map[string][]instanceKey{} // node -> its Running instances
	for _, o := range list.Items {
		if tg := o.(*v4.TaskGroup); tg.Status.Phase == v4.StatusRunning && tg.Spec.Desired != v4.DesiredStopped {
			running[tg.Spec.Node] = append(running[tg.Spec.Node], instanceOf(tg))
		}
	}
	if cfg.Node == "" {
		for node, keys := range running {
			if len(keys) > len(running[cfg.Node]) || len(keys) == len(running[cfg.Node]) && node < cfg.Node {
				cfg.Node = node
			}
		}
	}
	lost := map[instanceKey]bool{}
	for _, k := range running[cfg.Node] {
		lost[k] = true
	}
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
	if err := cfg.Freeze(cfg.Node); err != nil {
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
	return res, nil
}
