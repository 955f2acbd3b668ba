package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	v4 "github.com/berthhq/berth/api/v4"
)

// A workflow's node statuses outgrow its object past a few thousand nodes: the workflow
// controller then keeps them one key per node (docs/workflows.md, "Running workflows"):
//
//	/berth/v1/wfnodes/{namespace}/{workflow}/{uid}/{nodeID}   JSON of one v4.WfNodeStatus
//
// The workflow's UID is in the key so that a workflow deleted and created again under the
// same name never reads its predecessor's nodes. These keys are the controller's record,
// not objects: they have no definition and are not counted in the namespace's quota
// (a workflow's own size is, and MaxWorkflowNodeBytes bounds one node).

// Bounds of one write of node keys: well under the embedded member's 4,096 operations
// and 10 MiB request, and under an external etcd's default of 128 operations and
// 1.5 MiB, so a pass that changes 10,000 nodes writes several modest transactions.
const (
	wfNodeBatchOps   = 100
	wfNodeBatchBytes = 1 << 20
	// MaxWorkflowNodeBytes bounds the JSON of one node status (outputs are bounded by
	// v4.MaxStepOutputBytes, messages by the controller).
	MaxWorkflowNodeBytes = 2 << 20
)

func wfNodesPrefix(ns, name string) string {
	return prefix + "wfnodes/" + ns + "/" + name + "/"
}

func wfNodesUIDPrefix(ns, name, uid string) string {
	return wfNodesPrefix(ns, name) + uid + "/"
}

func checkWfNodeKey(ns, name, uid string) error {
	for _, p := range []struct{ what, v string }{{"namespace", ns}, {"workflow", name}, {"uid", uid}} {
		if err := checkName(p.what, p.v); err != nil {
			return err
		}
	}
	return nil
}

// WfNodeBatches splits node statuses, encoded, into the writes PutWorkflowNodes makes:
// each at most wfNodeBatchOps keys and about wfNodeBatchBytes. It is exported for the
// tests that check no write nears etcd's request limit.
func WfNodeBatches(nodes []v4.WfNodeStatus) ([][][]byte, error) {
	var out [][][]byte
	var cur [][]byte
	size := 0
	for _, n := range nodes {
		b, err := json.Marshal(n)
		if err != nil {
			return nil, fmt.Errorf("encode node %s: %w", n.ID, err)
		}
		if len(b) > MaxWorkflowNodeBytes {
			return nil, fmt.Errorf("node %s: %d bytes, more than %d", n.ID, len(b), MaxWorkflowNodeBytes)
		}
		if len(cur) > 0 && (len(cur) >= wfNodeBatchOps || size+len(b) > wfNodeBatchBytes) {
			out, cur, size = append(out, cur), nil, 0
		}
		cur, size = append(cur, b), size+len(b)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out, nil
}

// PutWorkflowNodes writes node statuses of workflow ns/name (UID uid), in batches
// (WfNodeBatches). A node's ID must be a key-safe name.
func (s *Store) PutWorkflowNodes(ctx context.Context, ns, name, uid string, nodes []v4.WfNodeStatus) error {
	if err := checkWfNodeKey(ns, name, uid); err != nil {
		return fmt.Errorf("put nodes of workflow %s/%s: %w", ns, name, err)
	}
	for _, n := range nodes {
		if err := checkName("node ID", n.ID); err != nil {
			return fmt.Errorf("put nodes of workflow %s/%s: %w", ns, name, err)
		}
	}
	batches, err := WfNodeBatches(nodes)
	if err != nil {
		return fmt.Errorf("put nodes of workflow %s/%s: %w", ns, name, err)
	}
	pfx, i := wfNodesUIDPrefix(ns, name, uid), 0
	for _, b := range batches {
		ops := make([]clientv3.Op, len(b))
		for j, val := range b {
			ops[j] = clientv3.OpPut(pfx+nodes[i].ID, string(val))
			i++
		}
		if _, err := s.client.Txn(ctx).Then(ops...).Commit(); err != nil {
			return fmt.Errorf("put nodes of workflow %s/%s: %w", ns, name, wrapEtcd(err))
		}
	}
	return nil
}

// WorkflowNodes reads every offloaded node of workflow ns/name (UID uid), a chunk at a
// time, by ID.
func (s *Store) WorkflowNodes(ctx context.Context, ns, name, uid string) (map[string]v4.WfNodeStatus, error) {
	if err := checkWfNodeKey(ns, name, uid); err != nil {
		return nil, fmt.Errorf("read nodes of workflow %s/%s: %w", ns, name, err)
	}
	out := map[string]v4.WfNodeStatus{}
	what := fmt.Sprintf("nodes of workflow %s/%s", ns, name)
	err := s.eachKV(ctx, wfNodesUIDPrefix(ns, name, uid), what, func(int64) error { return nil }, func(kv *mvccpb.KeyValue) error {
		var n v4.WfNodeStatus
		if err := json.Unmarshal(kv.Value, &n); err != nil {
			return fmt.Errorf("decode node %s: %w", kv.Key, err)
		}
		out[n.ID] = n
		return nil
	})
	return out, err
}

// WorkflowNodesPage reads at most limit offloaded nodes of workflow ns/name (UID uid)
// in ID order, from the first ID after `after` (""; the start); next is the last ID read
// when more may follow.
func (s *Store) WorkflowNodesPage(ctx context.Context, ns, name, uid, after string, limit int) (nodes []v4.WfNodeStatus, next string, err error) {
	if err := checkWfNodeKey(ns, name, uid); err != nil {
		return nil, "", fmt.Errorf("read nodes of workflow %s/%s: %w", ns, name, err)
	}
	if strings.ContainsAny(after, "/\x00") {
		return nil, "", fmt.Errorf("read nodes of workflow %s/%s: bad continue token", ns, name)
	}
	pfx := wfNodesUIDPrefix(ns, name, uid)
	from := pfx
	if after != "" {
		from = pfx + after + "\x00"
	}
	resp, err := s.client.Get(ctx, from, clientv3.WithRange(clientv3.GetPrefixRangeEnd(pfx)), clientv3.WithLimit(int64(limit)))
	if err != nil {
		return nil, "", fmt.Errorf("read nodes of workflow %s/%s: %w", ns, name, wrapEtcd(err))
	}
	for _, kv := range resp.Kvs {
		var n v4.WfNodeStatus
		if err := json.Unmarshal(kv.Value, &n); err != nil {
			return nil, "", fmt.Errorf("decode node %s: %w", kv.Key, err)
		}
		nodes = append(nodes, n)
	}
	if resp.More && len(nodes) > 0 {
		next = nodes[len(nodes)-1].ID
	}
	return nodes, next, nil
}

// DeleteWorkflowNodes removes the offloaded nodes of workflow ns/name: of every UID, or
// of one when uid is set (a retry drops a few with DeleteWorkflowNodeIDs instead).
func (s *Store) DeleteWorkflowNodes(ctx context.Context, ns, name, uid string) error {
	if err := checkName("namespace", ns); err != nil {
		return err
	}
	if err := checkName("workflow", name); err != nil {
		return err
	}
	pfx := wfNodesPrefix(ns, name)
	if uid != "" {
		if err := checkName("uid", uid); err != nil {
			return err
		}
		pfx = wfNodesUIDPrefix(ns, name, uid)
	}
	if _, err := s.client.Delete(ctx, pfx, clientv3.WithPrefix()); err != nil {
		return fmt.Errorf("delete nodes of workflow %s/%s: %w", ns, name, wrapEtcd(err))
	}
	return nil
}

// DeleteWorkflowNodeIDs removes some offloaded nodes of workflow ns/name (UID uid).
func (s *Store) DeleteWorkflowNodeIDs(ctx context.Context, ns, name, uid string, ids []string) error {
	if err := checkWfNodeKey(ns, name, uid); err != nil {
		return fmt.Errorf("delete nodes of workflow %s/%s: %w", ns, name, err)
	}
	pfx := wfNodesUIDPrefix(ns, name, uid)
	for start := 0; start < len(ids); start += wfNodeBatchOps {
		var ops []clientv3.Op
		for _, id := range ids[start:min(start+wfNodeBatchOps, len(ids))] {
			if err := checkName("node ID", id); err != nil {
				return err
			}
			ops = append(ops, clientv3.OpDelete(pfx+id))
		}
		if _, err := s.client.Txn(ctx).Then(ops...).Commit(); err != nil {
			return fmt.Errorf("delete nodes of workflow %s/%s: %w", ns, name, wrapEtcd(err))
		}
	}
	return nil
}
