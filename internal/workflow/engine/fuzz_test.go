package engine

import (
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// FuzzNext: any workflow admission accepts runs through the engine without a panic and
// within a bounded number of passes, its steps alternately succeeding and failing.
func FuzzNext(f *testing.F) {
	for _, doc := range []string{diamond, depends, stepsWhen, retried, withExit, wide, pipeline} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := v4.Parse(data)
		if err != nil || len(docs) != 1 {
			return
		}
		wf, ok := docs[0].Object.(*v4.Workflow)
		if !ok {
			return
		}
		in := Input{UID: "u", Name: wf.Metadata.Name, Spec: &wf.Spec, Nodes: map[string]v4.WfNodeStatus{}, StartedAt: t0, Now: t0}
		flip := false
		for range 200 {
			p := Next(in)
			if v4.WfPhaseFinished(p.Phase) {
				return
			}
			nodes := make(map[string]v4.WfNodeStatus, len(in.Nodes)+len(p.Updates))
			for id, n := range in.Nodes {
				nodes[id] = n
			}
			for _, n := range p.Updates {
				nodes[n.ID] = n
			}
			for id, n := range nodes {
				if n.Type == v4.WfNodePod && !v4.WfPhaseFinished(n.Phase) || n.Type == v4.WfNodeSuspend && n.Phase == v4.WfRunning {
					n.Phase, n.FinishedAt = v4.WfSucceeded, in.Now
					if flip = !flip; flip {
						n.Phase = v4.WfFailed
					}
					nodes[id] = n
				}
			}
			in.Nodes = nodes
			if !p.Requeue.IsZero() && p.Requeue.After(in.Now) {
				in.Now = p.Requeue
			}
		}
	})
}
