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
