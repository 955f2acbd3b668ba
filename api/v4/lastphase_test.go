package v4

import "testing"

func TestKeepLastPhase(t *testing.T) {
	for _, c := range []struct{ phase, oldPhase, oldLast, want string }{
		{AppRunning, AppDeploying, AppStaging, AppDeploying}, // a change: the phase it replaces
		{AppRunning, AppRunning, AppDeploying, AppDeploying}, // no change: kept
		{AppStaging, "", "", ""},                             // the first phase: none before it
	} {
		st := WorkloadStatus{Phase: c.phase}
		st.KeepLastPhase(WorkloadStatus{Phase: c.oldPhase, LastPhase: c.oldLast})
		tg := TaskGroupStatus{Phase: c.phase, LastPhase: "agent's"}
		tg.KeepLastPhase(TaskGroupStatus{Phase: c.oldPhase, LastPhase: c.oldLast})
		if st.LastPhase != c.want || tg.LastPhase != c.want {
			t.Errorf("%s after %s (last %s): %q, %q, want %q", c.phase, c.oldPhase, c.oldLast, st.LastPhase, tg.LastPhase, c.want)
		}
	}
}

// A task's LastStatus is kept the same way, task by task (by name); the reported tasks
// are not changed in place.
func TestKeepLastPhaseTasks(t *testing.T) {
	reported := []TaskStatus{{Name: "a", Status: StatusRunning, LastStatus: "agent's"}, {Name: "b", Status: StatusRunning}, {Name: "new", Status: StatusStaging}}
	st := TaskGroupStatus{Phase: StatusRunning, Tasks: reported}
	st.KeepLastPhase(TaskGroupStatus{Phase: StatusStarting, Tasks: []TaskStatus{
		{Name: "a", Status: StatusStarting, LastStatus: StatusStaging}, {Name: "b", Status: StatusRunning, LastStatus: StatusStarting}}})
	for i, want := range []string{StatusStarting, StatusStarting, ""} {
		if got := st.Tasks[i].LastStatus; got != want {
			t.Errorf("task %s: %q, want %q", st.Tasks[i].Name, got, want)
		}
	}
	if reported[0].LastStatus != "agent's" {
		t.Errorf("the reported tasks were changed in place: %+v", reported)
	}
}
