package controller

import (
	v4 "github.com/berthhq/berth/api/v4"
)

// keepOfWorkflow is what the leader's workflow cache keeps of a workflow: all of one
// that runs, and of a finished one only what its readers (this controller and the cron
// controller) read again: its metadata, its phase and times, and the policies that
// delete its steps and itself (podGC, ttlStrategy). A cluster retaining 10,000 finished
// workflows then holds them in a few megabytes instead of their templates and nodes;
// the API reads workflows from the store, and a pass that needs a finished workflow's
// nodes reads them there too (workflow_gc.go).
func keepOfWorkflow(o v4.Object) v4.Object {
	wf, ok := o.(*v4.Workflow)
	if !ok || !v4.WfPhaseFinished(wf.Status.Phase) {
		return o
	}
	st := wf.Status
	return &v4.Workflow{TypeMeta: wf.TypeMeta, Metadata: wf.Metadata,
		Spec: v4.WorkflowSpec{PodGC: wf.Spec.PodGC, TTLStrategy: wf.Spec.TTLStrategy, Shutdown: wf.Spec.Shutdown},
		Status: v4.WorkflowStatus{UID: st.UID, Phase: st.Phase, StartedAt: st.StartedAt, FinishedAt: st.FinishedAt,
			Message: st.Message, NodesOffloaded: st.NodesOffloaded, Progress: st.Progress, RetryCount: st.RetryCount}}
}
