package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/pki"
)

// Ownership (docs/agent.md, "Ownership"). Several clusters may have agents on one
// machine (two `berth dev`s, a dev cluster beside a real agent), sharing its Docker
// daemon and cgroups, and their node names may be the same. So an agent works for one
// node of one cluster: its cluster's ID is the hash of the CA it joined (the one its join
// token pins, kept in DATA-DIR/tls/ca.crt), which no server can make it take for another
// cluster's. Everything it starts carries that ID (containers and sandboxes as a label
// and in their names, process tasks in their state and cgroup names, pod network states,
// the checkpoint), and it adopts, stops and removes only what carries it
// (driver.Owner.Owns). What an agent started before tasks carried their cluster is its
// own when it names its node.

// claimOwnership makes the agent its cluster's owner of the node, and binds the
// checkpoint to that cluster.
func (a *Agent) claimOwnership() error {
	a.owner = driver.Owner{Cluster: pki.Hash(a.id.ca), Node: a.cfg.NodeName}
	aside, err := a.ckpt.claim(a.owner.Cluster)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if aside != "" {
		a.log.Warn("the checkpoint was another cluster's (this data dir's agent joined another cluster): it is kept aside, and what it lists is left alone (its processes and containers stay that cluster's)",
			"kept", aside, "cluster", a.owner.Cluster)
	}
	return nil
}

// claim binds the checkpoint to cluster. A checkpoint of no cluster (an older agent's,
// in this data dir) becomes the cluster's. One of another cluster is renamed to
// checkpoint-<its tag>.json beside it, and the agent starts with an empty one: its
// entries name that cluster's task groups, whose tasks and directories reconcile would
// otherwise remove as "deleted while the agent was away". It returns the new name of a
// checkpoint set aside, "" when there was none.
func (c *checkpoint) claim(cluster string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.data.Cluster {
	case cluster:
		return "", nil
	case "":
		c.data.Cluster = cluster
		if err := c.saveLocked(); err != nil {
			return "", fmt.Errorf("checkpoint: %w", err)
		}
		return "", nil
	}
	old := driver.Owner{Cluster: c.data.Cluster}.Tag()
	aside := filepath.Join(filepath.Dir(c.path), strings.TrimSuffix(filepath.Base(c.path), ".json")+"-"+old+".json")
	if err := os.Rename(c.path, aside); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("set aside the checkpoint of cluster %s: %w", c.data.Cluster, err)
	}
	c.data = checkpointData{Version: checkpointVersion, Node: c.data.Node, Cluster: cluster, TaskGroups: map[string]*checkpointEntry{}}
	if err := c.saveLocked(); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	return aside, nil
}
