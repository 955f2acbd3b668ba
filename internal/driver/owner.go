package driver

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Every task carries LabelCluster, the ID of the cluster whose agent started it (its CA's
// hash, pki.Hash): several clusters may share a machine, its Docker daemon and its
// cgroups, and a node name says nothing of which cluster a task is of (two `berth dev`s
// both call their node after the host).

// Owner is the agent a driver works for: one node of one cluster. A driver lists, adopts,
// stops and removes only the tasks its owner Owns.
type Owner struct {
	// Cluster is the cluster's ID, the hash of its CA as the agent's join token pins it
	// ("sha256:<hex>"): no server can make an agent take another cluster's ID.
	Cluster string
	// Node is the node's name.
	Node string
}

// Owns reports whether a task with these labels is the owner's (docs/agent.md,
// "Ownership"):
//
//   - a task labelled with a cluster is the owner's when that is the owner's cluster and
//     it names no other node (two agents of one cluster may share a machine);
//   - a task without a cluster label was started before tasks carried one: it is the
//     owner's only when it names the owner's node. Nothing better tells the clusters of
//     such tasks apart, and a legacy task without a node label is nobody's.
//
// An owner without a node (a driver used on its own, as in tests) takes the node part
// as satisfied; one without a cluster owns only unlabelled tasks.
func (o Owner) Owns(labels map[string]string) bool {
	node := labels[LabelNode]
	if c := labels[LabelCluster]; c != "" {
		return c == o.Cluster && (node == "" || o.Node == "" || node == o.Node)
	}
	return o.Node == "" || node == o.Node
}

// Stamp sets the owner's cluster label on labels (removing one a workload's own labels
// may have carried, when the owner has no cluster), so a task can never claim to be of
// another cluster than the agent's that started it.
func (o Owner) Stamp(labels map[string]string) {
	if o.Cluster == "" {
		delete(labels, LabelCluster)
		return
	}
	labels[LabelCluster] = o.Cluster
}

// Tag is the short form of the owner's cluster in the names of what tasks hold outside
// the agent's data dir (container names, cgroups), so two clusters' tasks of the same ID
// never share one: the first 12 hex digits of the CA hash, or of a SHA-256 of an ID of
// another form. Empty without a cluster (names are then berth's older ones).
func (o Owner) Tag() string {
	if o.Cluster == "" {
		return ""
	}
	if h, ok := strings.CutPrefix(o.Cluster, "sha256:"); ok && len(h) >= tagLen && isLowerHex(h[:tagLen]) {
		return h[:tagLen]
	}
	sum := sha256.Sum256([]byte(o.Cluster))
	return hex.EncodeToString(sum[:])[:tagLen]
}

// tagLen is the length of a cluster tag: 48 bits tell clusters on one machine apart.
const tagLen = 12

// TagSeparator ends a cluster tag in a name. Namespaces, which begin task IDs, never
// hold '_' (api/v4's names are lowercase letters, digits and '-'), so a tagged name is
// never an untagged one of another task.
const TagSeparator = "_"

func isLowerHex(s string) bool {
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}
