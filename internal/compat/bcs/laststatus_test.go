package bcs

import (
	"encoding/json"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/bcs/bcswire"
)

// An application's and a task group's LastStatus, in the scheduler's shapes and in
// storage's, is the phase before the current one; Mode is empty, as BCS's was.
func TestLastStatus(t *testing.T) {
	w := &v4.Workload{Metadata: v4.ObjectMeta{Name: "web", Namespace: "a"}, Spec: v4.WorkloadSpec{Instance: 1},
		Status: v4.WorkloadStatus{Phase: v4.AppRunning, LastPhase: v4.AppDeploying}}
	tg := &v4.TaskGroup{Metadata: v4.ObjectMeta{Name: "0.web.a.c.1", Namespace: "a"},
		Spec: v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindApplication, Name: "web"}},
		Status: v4.TaskGroupStatus{Phase: v4.StatusRunning, LastPhase: v4.StatusStarting,
			Tasks: []v4.TaskStatus{{Name: "web", Status: v4.StatusRunning, LastStatus: v4.StatusStaging}}}}
	var app bcswire.Application
	if err := bcswire.Decode(mustJSON(t, applicationOf(w, v4.KindApplication, []*v4.TaskGroup{tg}, "c")), &app); err != nil ||
		app.LastStatus != v4.AppDeploying || app.Mode != "" {
		t.Errorf("application: %v %+v", err, app)
	}
	var got bcswire.TaskGroup
	tg.Spec.Template.Spec.Processes = []v4.ProcessTask{{ProcName: "web"}}
	if err := bcswire.Decode(mustJSON(t, taskGroupOf(tg, nil, "c")), &got); err != nil || got.LastStatus != v4.StatusStarting ||
		len(got.Taskgroup) != 1 || got.Taskgroup[0].LastStatus != v4.StatusStaging {
		t.Errorf("task group: %v %+v", err, got)
	}
	if rc := storageRCOf(w, v4.KindApplication, nil, "c"); rc.LastStatus != v4.AppDeploying {
		t.Errorf("storage's application: %+v", rc)
	}
	if pod := storagePodOf(tg, "c"); pod.LastStatus != v4.StatusStarting || len(pod.ContainerStatuses) != 1 || pod.ContainerStatuses[0].LastStatus != v4.StatusStaging {
		t.Errorf("storage's pod: %+v", pod)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
