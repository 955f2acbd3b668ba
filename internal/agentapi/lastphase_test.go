package agentapi

import (
	"context"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store/storetest"
)

// A status write that changes the phase keeps the phase it replaces as LastPhase; one
// that does not keeps LastPhase as it was; what the agent says of it is ignored.
func TestStatusKeepsLastPhase(t *testing.T) {
	storetest.Reset(t, testStore)
	createTaskGroup(t, "ns", "0.web.ns.c.1", "n1", v4.StatusStarting)
	write := func(pid int) v4.TaskGroupStatus {
		t.Helper()
		w := &statusWrite{ns: "ns", name: "0.web.ns.c.1", node: "n1", done: make(chan statusResult, 1),
			st: v4.TaskGroupStatus{Phase: v4.StatusRunning, LastPhase: "Bogus",
				Tasks: []v4.TaskStatus{{Name: "weba", Status: v4.StatusRunning, Info: v4.ContainerInfo{Pid: pid}}}}}
		newStatusBatcher(testStore, taskGroupCache(t), storetest.QuietLogger()).write(context.Background(), []*statusWrite{w})
		if r := <-w.done; r.err != nil || r.alone {
			t.Fatalf("write: %+v", r)
		}
		return getTaskGroup(t, "ns", "0.web.ns.c.1").Status
	}
	if st := write(1); st.Phase != v4.StatusRunning || st.LastPhase != v4.StatusStarting || st.Tasks[0].LastStatus == v4.StatusRunning {
		t.Fatalf("Starting to Running: %+v", st)
	}
	first := getTaskGroup(t, "ns", "0.web.ns.c.1").Status.Tasks[0].LastStatus
	if st := write(2); st.Tasks[0].Info.Pid != 2 || st.LastPhase != v4.StatusStarting || st.Tasks[0].LastStatus != first {
		t.Fatalf("Running again: %+v", st)
	}
}
