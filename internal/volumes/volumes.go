// Package volumes holds what the volume controller (internal/controller) and the agent
// protocol's claims (internal/agentapi) share about CSI volume objects
// (docs/volumes.md): the interface of the controller calls the server makes through an
// agent, which node's plugin serves a volume's controller calls, the secrets of a call,
// the access-mode rules of claims, and the compare-and-swap writes of a volume's status.
package volumes

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// VolumeController makes one CSI controller call of req.Plugin on the agent of node
// (POST /v1/csi/controller there). The server implements it over its verified agent
// client; tests fake it.
type VolumeController interface {
	Call(ctx context.Context, node string, req v4.CSIControllerRequest) (v4.CSIControllerReply, error)
}

// ErrRefused marks a call the plugin (or the agent, for a request it cannot serve)
// refused for good: the same request will be refused again, so the volume goes to Error
// rather than being retried. Any other error of a call is taken as passing (a node
// unreachable, a plugin restarting) and retried with backoff.
var ErrRefused = errors.New("refused")

// ErrNoController is wrapped by Controller's error when no node can make the call.
var ErrNoController = errors.New("no controller plugin")

// Plugin returns node n's report of plugin name.
func Plugin(n *v4.Node, name string) (v4.CSIPlugin, bool) {
	for _, p := range n.Status.CSIPlugins {
		if p.Name == name {
			return p, true
		}
	}
	return v4.CSIPlugin{}, false
}

// Has reports whether plugin p's controller offers capability c (v4.CSICreateDelete,
// v4.CSIPublishUnpublish).
func Has(p v4.CSIPlugin, c string) bool { return slices.Contains(p.ControllerCapabilities, c) }

// Controller picks the node whose agent makes vol's controller calls: a Ready node whose
// plugin vol.Spec.Plugin is healthy with its controller service, one whose topology
// matches the volume's first (the volume is created where that controller can reach it),
// then by name, so the choice is stable while the nodes are. The error wraps
// ErrNoController and says why.
func Controller(nodes []*v4.Node, vol *v4.CSIVolume) (node string, p v4.CSIPlugin, err error) {
	type candidate struct {
		node    string
		plugin  v4.CSIPlugin
		matches bool
	}
	var cands []candidate
	for _, n := range nodes {
		if n.Status.Phase != v4.NodeReady {
			continue
		}
		pl, ok := Plugin(n, vol.Spec.Plugin)
		if !ok || !pl.Healthy || !pl.Controller {
			continue
		}
		cands = append(cands, candidate{n.Metadata.Name, pl, TopologyMatches(pl.Topology, requiredOf(vol))})
	}
	if len(cands) == 0 {
		return "", v4.CSIPlugin{}, fmt.Errorf("%w: no Ready node has a healthy controller of plugin %s", ErrNoController, vol.Spec.Plugin)
	}
	best := slices.MinFunc(cands, func(a, b candidate) int {
		if a.matches != b.matches {
			if a.matches {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.node, b.node)
	})
	return best.node, best.plugin, nil
}

func requiredOf(vol *v4.CSIVolume) []v4.VolumeTopology {
	if vol.Spec.Topology == nil {
		return nil
	}
	return vol.Spec.Topology.Required
}

// TopologyMatches reports whether a node's topology (segments) is within one of the
// topologies of want (every segment of it equal on the node); no topologies wanted
// matches any node.
func TopologyMatches(have map[string]string, want []v4.VolumeTopology) bool {
	if len(want) == 0 {
		return true
	}
	for _, t := range want {
		ok := true
		for k, v := range t.Segments {
			if have[k] != v {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// Secrets reads the items of the secret vol names (nil without one), decoded, for one
// call: they are never kept. Errors name the secret, never a value.
func Secrets(ctx context.Context, st *store.Store, vol *v4.CSIVolume) (map[string]string, error) {
	if vol.Spec.Secrets == nil || vol.Spec.Secrets.Name == "" {
		return nil, nil
	}
	ns, name := vol.Metadata.Namespace, vol.Spec.Secrets.Name
	s, err := store.Typed[*v4.Secret](st, v4.KindSecret).Get(ctx, ns, name)
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s of volume %s: %w", ns, name, vol.Metadata.Name, err)
	}
	out := make(map[string]string, len(s.Datas))
	for _, k := range slices.Sorted(maps.Keys(s.Datas)) {
		b, err := base64.StdEncoding.DecodeString(s.Datas[k].Content)
		if err != nil {
			return nil, fmt.Errorf("secret %s/%s of volume %s: item %q is not base64", ns, name, vol.Metadata.Name, k)
		}
		out[k] = string(b)
	}
	return out, nil
}

// The modes of a claim (v4.VolumeClaim.Mode).
const (
	ModeRead  = "read"
	ModeWrite = "write"
)

// ModeOf is the mode of a claim that is read-only or not.
func ModeOf(readOnly bool) string {
	if readOnly {
		return ModeRead
	}
	return ModeWrite
}

// readerOnly reports whether an access mode admits readers only.
func readerOnly(mode string) bool {
	return mode == v4.AccessSingleNodeReader || mode == v4.AccessMultiNodeReader
}

// ConflictError is a claim the volume's access mode does not admit beside a live one.
type ConflictError struct {
	Volume, Mode string
	Holder       v4.VolumeClaim // zero for a write claim of a reader-only volume
	Reason       string
}

func (e *ConflictError) Error() string {
	if e.Holder.TaskGroup == "" {
		return fmt.Sprintf("volume %s is %s: %s", e.Volume, e.Mode, e.Reason)
	}
	return fmt.Sprintf("volume %s is %s: %s (held by task group %s on node %s, %s)",
		e.Volume, e.Mode, e.Reason, e.Holder.TaskGroup, e.Holder.Node, e.Holder.Mode)
}

// MaxClaims bounds a volume's claims: each is a line of its status, and a multi-node
// volume claimed by every instance of a large workload must not grow its object past
// what etcd takes in one write.
const MaxClaims = 1000

// CheckAccess reports whether claim c may be held beside vol's claims of other task
// groups under its access mode: single-node modes keep every claim on one node,
// multi-node-single-writer admits one writer, reader-only modes admit readers only. A
// claim of the same task group is not counted: claiming again is idempotent. A new claim
// past MaxClaims is refused.
func CheckAccess(vol *v4.CSIVolume, c v4.VolumeClaim) error {
	mode := vol.Spec.AccessMode
	conflict := func(holder v4.VolumeClaim, reason string) error {
		return &ConflictError{Volume: vol.Metadata.Name, Mode: mode, Holder: holder, Reason: reason}
	}
	if readerOnly(mode) && c.Mode != ModeRead {
		return conflict(v4.VolumeClaim{}, "it admits read-only claims only")
	}
	if _, held := ClaimOf(vol, c.TaskGroup); !held && len(vol.Status.Claims) >= MaxClaims {
		return conflict(v4.VolumeClaim{}, fmt.Sprintf("it holds %d claims, the most one volume keeps", len(vol.Status.Claims)))
	}
	for _, h := range vol.Status.Claims {
		if h.TaskGroup == c.TaskGroup {
			continue
		}
		switch mode {
		case v4.AccessSingleNodeReader, v4.AccessSingleNodeWriter:
			if h.Node != c.Node {
				return conflict(h, "all its claims must be on one node")
			}
		case v4.AccessMultiNodeSingleWriter:
			if c.Mode == ModeWrite && h.Mode == ModeWrite {
				return conflict(h, "it admits one writer")
			}
		}
	}
	return nil
}

// ClaimOf returns vol's claim of task group tg.
func ClaimOf(vol *v4.CSIVolume, tg string) (v4.VolumeClaim, bool) {
	for _, c := range vol.Status.Claims {
		if c.TaskGroup == tg {
			return c, true
		}
	}
	return v4.VolumeClaim{}, false
}

// WithoutClaim removes task group tg's claim from vol; it reports whether there was one.
func WithoutClaim(vol *v4.CSIVolume, tg string) bool {
	n := len(vol.Status.Claims)
	vol.Status.Claims = slices.DeleteFunc(vol.Status.Claims, func(c v4.VolumeClaim) bool { return c.TaskGroup == tg })
	if len(vol.Status.Claims) == 0 {
		vol.Status.Claims = nil
	}
	return len(vol.Status.Claims) != n
}

// updateTries bounds Update's compare-and-swap loop.
const updateTries = 8

// Update reads volume ns/name from the store, lets change edit it, and writes it back
// with the version read as the precondition, again from a fresh read when another write
// came between (a bounded number of times). change returns whether it changed anything
// (nothing is written otherwise) or an error, which Update returns as it is. The volume
// written (or read, when unchanged) is returned.
func Update(ctx context.Context, st *store.Store, ns, name string, change func(*v4.CSIVolume) (bool, error)) (*v4.CSIVolume, error) {
	vols := store.Typed[*v4.CSIVolume](st, v4.KindVolume)
	for range updateTries {
		vol, err := vols.Get(ctx, ns, name)
		if err != nil {
			return nil, err
		}
		changed, err := change(vol)
		if err != nil || !changed {
			return vol, err
		}
		err = vols.Update(ctx, vol, store.Raw{})
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("update volume %s/%s: %w", ns, name, err)
		}
		return vol, nil
	}
	return nil, fmt.Errorf("update volume %s/%s: %w (gave up after %d concurrent writes)", ns, name, store.ErrConflict, updateTries)
}

// HasController reports whether any node reports plugin name with its controller
// service, healthy or not: a plugin that has none anywhere (a node-only plugin) needs no
// ControllerPublish, while one whose controller is down must wait for it.
func HasController(nodes []*v4.Node, name string) bool {
	for _, n := range nodes {
		if p, ok := Plugin(n, name); ok && p.Controller {
			return true
		}
	}
	return false
}

// PublishedOn returns a claim of vol on node other than task group tg's that carries a
// ControllerPublish of the volume to that node: one publish serves every task group of a
// node.
func PublishedOn(vol *v4.CSIVolume, node, tg string) (v4.VolumeClaim, bool) {
	for _, c := range vol.Status.Claims {
		if c.Node == node && c.TaskGroup != tg && c.NodeID != "" {
			return c, true
		}
	}
	return v4.VolumeClaim{}, false
}

// Unpublish undoes claim c's ControllerPublish, when it made one (c.NodeID is set only
// then) and no other claim on its node still uses it, through the controller node
// chosen among nodes.
func Unpublish(ctx context.Context, calls VolumeController, st *store.Store, nodes []*v4.Node, vol *v4.CSIVolume, c v4.VolumeClaim) error {
	if c.NodeID == "" {
		return nil
	}
	if _, shared := PublishedOn(vol, c.Node, c.TaskGroup); shared {
		return nil
	}
	node, _, err := Controller(nodes, vol)
	if err != nil {
		return fmt.Errorf("unpublish volume %s from node %s: %w", vol.Metadata.Name, c.Node, err)
	}
	secrets, err := Secrets(ctx, st, vol)
	if err != nil {
		return err
	}
	_, err = calls.Call(ctx, node, v4.CSIControllerRequest{Plugin: vol.Spec.Plugin, Op: v4.CSIOpUnpublish,
		VolumeID: vol.Status.ExternalID, NodeID: c.NodeID, Context: vol.Status.Context, Secrets: secrets})
	if err != nil {
		return fmt.Errorf("unpublish volume %s from node %s: %w", vol.Metadata.Name, c.Node, err)
	}
	return nil
}
