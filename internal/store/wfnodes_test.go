package store

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// A 10,000-node workflow's nodes are written in transactions far from etcd's request
// limit (1.5 MiB by default, 10 MiB embedded) and op limit (128 by default), read back
// whole and page by page, and deleted with the workflow.
func TestWorkflowNodes10000(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	msg := strings.Repeat("m", 200)
	nodes := make([]v4.WfNodeStatus, 10000)
	for i := range nodes {
		v := fmt.Sprintf("value-%d", i)
		nodes[i] = v4.WfNodeStatus{ID: fmt.Sprintf("n%020d", i), Name: fmt.Sprintf("wf.main(%d:%d)", i, i), Type: v4.WfNodePod,
			Phase: v4.WfSucceeded, Message: msg, TaskGroup: fmt.Sprintf("wf.n%020d", i),
			Outputs: &v4.WfOutputs{Parameters: []v4.WfParameter{{Name: "out", Value: &v}}}}
	}
	batches, err := WfNodeBatches(nodes)
	if err != nil {
		t.Fatal(err)
	}
	largest, ops := 0, 0
	for _, b := range batches {
		size := 0
		for _, v := range b {
			size += len(v) + 80 // the key
		}
		largest, ops = max(largest, size), max(ops, len(b))
	}
	if largest > 1<<20+64<<10 || ops > 128 {
		t.Fatalf("largest write %d bytes, %d ops", largest, ops)
	}
	t.Logf("10,000 nodes: %d writes, the largest %d bytes and %d keys", len(batches), largest, ops)
	if err := testStore.PutWorkflowNodes(ctx, "ns", "wf", "uid1", nodes); err != nil {
		t.Fatal(err)
	}
	all, err := testStore.WorkflowNodes(ctx, "ns", "wf", "uid1")
	if err != nil || len(all) != 10000 || *all[nodes[9999].ID].Outputs.Parameters[0].Value != "value-9999" {
		t.Fatalf("read back %d nodes: %v", len(all), err)
	}
	seen, after, pages := 0, "", 0
	for ; pages < 100; pages++ {
		page, next, err := testStore.WorkflowNodesPage(ctx, "ns", "wf", "uid1", after, 3000)
		if err != nil {
			t.Fatal(err)
		}
		seen += len(page)
		if next == "" {
			break
		}
		after = next
	}
	if seen != 10000 || pages != 3 {
		t.Errorf("paged %d nodes in %d pages", seen, pages+1)
	}
	if other, _ := testStore.WorkflowNodes(ctx, "ns", "wf", "uid2"); len(other) != 0 {
		t.Error("another UID of the same name sees the nodes")
	}
	if err := testStore.DeleteWorkflowNodeIDs(ctx, "ns", "wf", "uid1", []string{nodes[0].ID}); err != nil {
		t.Fatal(err)
	}
	if err := testStore.DeleteWorkflowNodes(ctx, "ns", "wf", ""); err != nil {
		t.Fatal(err)
	}
	if left, _ := testStore.WorkflowNodes(ctx, "ns", "wf", "uid1"); len(left) != 0 {
		t.Errorf("%d nodes left", len(left))
	}
}

// Hostile names never reach outside the workflow's keys.
func TestWorkflowNodesHostile(t *testing.T) {
	ctx := context.Background()
	if err := testStore.PutWorkflowNodes(ctx, "ns", "wf", "u", []v4.WfNodeStatus{{ID: "../x"}}); err == nil {
		t.Error("a node ID with a slash was written")
	}
	if err := testStore.DeleteWorkflowNodes(ctx, "ns", "w/f", ""); err == nil {
		t.Error("a workflow name with a slash was accepted")
	}
	if _, _, err := testStore.WorkflowNodesPage(ctx, "ns", "wf", "u", "a/b", 10); err == nil {
		t.Error("a continue token with a slash was accepted")
	}
}
