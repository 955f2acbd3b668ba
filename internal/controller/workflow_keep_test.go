package controller

import (
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// The workflow cache keeps a running workflow whole, and of a finished one what this
// controller and the cron controller read again.
func TestKeepOfWorkflow(t *testing.T) {
	ttl := 60
	now := time.Now().UTC()
	wf := &v4.Workflow{TypeMeta: v4.TypeMeta{Kind: v4.KindWorkflow},
		Metadata: v4.ObjectMeta{Name: "w", Namespace: "ns", ResourceVersion: "7", Labels: map[string]string{v4.CronWorkflowLabel: "nightly"}},
		Spec: v4.WorkflowSpec{Entrypoint: "m", Templates: []v4.WfTemplate{{Name: "m"}},
			PodGC: &v4.WfPodGC{Strategy: v4.WfPodGCNever}, TTLStrategy: &v4.WfTTLStrategy{SecondsAfterCompletion: &ttl}},
		Status: v4.WorkflowStatus{UID: "u", Phase: v4.WfRunning, StartedAt: now,
			Nodes: map[string]v4.WfNodeStatus{"n": {ID: "n"}}, NodeCounts: map[string]int{v4.WfRunning: 1}}}
	if keepOfWorkflow(wf) != v4.Object(wf) {
		t.Fatal("a running workflow is not kept whole")
	}
	wf.Status.Phase, wf.Status.FinishedAt = v4.WfFailed, now
	got := keepOfWorkflow(wf).(*v4.Workflow)
	if got == wf || len(got.Spec.Templates) != 0 || got.Status.Nodes != nil || got.Status.NodeCounts != nil {
		t.Errorf("a finished workflow is kept with its templates or nodes: %+v", got)
	}
	if got.Metadata.Labels[v4.CronWorkflowLabel] != "nightly" || got.Metadata.ResourceVersion != "7" || got.Status.UID != "u" ||
		got.Status.Phase != v4.WfFailed || !got.Status.FinishedAt.Equal(now) || got.Spec.PodGC.Strategy != v4.WfPodGCNever ||
		*got.Spec.TTLStrategy.SecondsAfterCompletion != 60 {
		t.Errorf("kept %+v", got)
	}
	if len(wf.Spec.Templates) != 1 || len(wf.Status.Nodes) != 1 {
		t.Error("keeping changed the object written")
	}
}
