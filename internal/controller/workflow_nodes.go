package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
)

// A workflow's node statuses live in its object while they are small, and one key per
// node past WorkflowInlineBytes (store/wfnodes.go): a 10,000-node workflow never writes one
// object near etcd's request limit, and a pass writes only the nodes it changed.

// loadNodes reads the workflow's nodes: inline, remembered from this term's last write,
// or from the store.
func (p *wfPass) loadNodes(ctx context.Context) error {
	if !p.st.NodesOffloaded {
		p.nodes = maps.Clone(p.st.Nodes)
		if p.nodes == nil {
			p.nodes = map[string]v4.WfNodeStatus{}
		}
		p.before = p.st.Nodes
		return nil
	}
	p.c.mu.Lock()
	memo := p.c.nodes[p.key]
	p.c.mu.Unlock()
	if memo != nil && memo.uid == p.st.UID && memo.rv == p.wf.Metadata.ResourceVersion {
		p.before = memo.nodes
	} else {
		nodes, err := p.c.store.WorkflowNodes(ctx, p.key.Namespace, p.key.Name, p.st.UID)
		if err != nil {
			return err
		}
		p.before = nodes
	}
	p.nodes = maps.Clone(p.before)
	return nil
}

// write sums the nodes up into the status and writes it: the changed nodes' keys
// first when they are offloaded (or are to be now), then the object.
func (p *wfPass) write(ctx context.Context) error {
	p.summarize()
	p.events()
	if !p.st.NodesOffloaded && inlineSize(p.nodes, p.c.inlineBytes) > p.c.inlineBytes {
		p.st.NodesOffloaded = true
		for id := range p.nodes {
			p.changed[id] = true // every node gets its key
		}
	}
	var memo *nodeMemo
	if p.st.NodesOffloaded {
		ids := slices.Sorted(maps.Keys(p.changed))
		nodes := make([]v4.WfNodeStatus, 0, len(ids))
		for _, id := range ids {
			if n, ok := p.nodes[id]; ok {
				nodes = append(nodes, n)
			}
		}
		if err := p.c.store.PutWorkflowNodes(ctx, p.key.Namespace, p.key.Name, p.st.UID, nodes); err != nil {
			p.c.remember(p.key, nil, "")
			return err
		}
		p.st.Nodes = nil
		if !v4.WfPhaseFinished(p.st.Phase) { // a finished workflow's nodes are not read again
			memo = &nodeMemo{uid: p.st.UID, nodes: p.nodes}
		}
	} else {
		p.st.Nodes = p.nodes
		if len(p.nodes) == 0 {
			p.st.Nodes = nil
		}
	}
	return p.c.writeStatusWith(ctx, p.key, p.st, memo, p.resumed)
}

// inlineSize is the JSON size of nodes kept in the object.
func inlineSize(nodes map[string]v4.WfNodeStatus, limit int) int {
	if len(nodes) < 16 && limit >= WorkflowInlineBytes {
		return 0 // small for sure
	}
	b, err := json.Marshal(nodes)
	if err != nil {
		return limit + 1
	}
	return len(b)
}

// summarize sets the progress ("done/total" of the steps) and the counts by phase.
func (p *wfPass) summarize() {
	counts := map[string]int{}
	done, total := 0, 0
	for _, n := range p.nodes {
		counts[n.Phase]++
		if n.Type != v4.WfNodePod {
			continue
		}
		total++
		if v4.WfPhaseFinished(n.Phase) {
			done++
		}
	}
	p.st.NodeCounts = counts
	if len(counts) == 0 {
		p.st.NodeCounts = nil
	}
	p.st.Progress = ""
	if total > 0 {
		p.st.Progress = strconv.Itoa(done) + "/" + strconv.Itoa(total)
	}
}

// events records the phase changes of the nodes this pass changed.
func (p *wfPass) events() {
	for _, id := range slices.Sorted(maps.Keys(p.changed)) {
		n, ok := p.nodes[id]
		if !ok {
			continue
		}
		if old, seen := p.before[id]; seen && old.Phase == n.Phase {
			continue
		}
		p.c.nodePhase(p.key, n)
	}
}

// nodePhase records a node's phase change: the metric for every node, an event for
// steps (Pod nodes) once they run or end.
func (c *WorkflowController) nodePhase(key scheduler.AppKey, n v4.WfNodeStatus) {
	c.opts.Metrics.workflowPhase("node", n.Phase)
	if n.Type != v4.WfNodePod || n.Phase == v4.WfPending {
		return
	}
	typ := v4.EventNormal
	if n.Phase == v4.WfFailed || n.Phase == v4.WfError {
		typ = v4.EventWarning
	}
	msg := fmt.Sprintf("step %s (%s) is %s", n.Name, n.ID, n.Phase)
	if n.Message != "" {
		msg += ": " + n.Message
	}
	c.record(v4.Event{Type: typ, Reason: "Step" + n.Phase, Kind: key.Kind, Namespace: key.Namespace, Name: key.Name,
		TaskGroup: n.TaskGroup, Message: msg})
}

// writeStatusWith is writeStatus that also drops the resume annotation the pass
// handled (unless it changed since).
func (c *WorkflowController) writeStatusWith(ctx context.Context, key scheduler.AppKey, st v4.WorkflowStatus, memo *nodeMemo, resumed string) error {
	if resumed == "" {
		return c.writeStatus(ctx, key, st, memo)
	}
	return writeStored(ctx, c.store, key, func(wf *v4.Workflow) error {
		if wf.Metadata.Annotations[WorkflowResumeAnnotation] != resumed || wf.Status.UID != st.UID {
			return c.writeStatus(ctx, key, st, memo)
		}
		wf.Metadata.Annotations = maps.Clone(wf.Metadata.Annotations)
		delete(wf.Metadata.Annotations, WorkflowResumeAnnotation)
		return c.storeStatus(ctx, key, wf, st, memo)
	})
}

// sameStatusJSON compares two statuses as they are stored (times read back and times
// just taken differ in memory, not in JSON).
func sameStatusJSON(a, b v4.WorkflowStatus) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && slices.Equal(x, y)
}
