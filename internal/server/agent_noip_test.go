package server

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store/storetest"
)

// A task group that becomes Running with a task without an IP gets one NoIP warning,
// naming its owner, task group and node; one with IPs gets none.
func TestAgentStatusRecordsNoIP(t *testing.T) {
	url := newTestServer(t, Config{})
	report := func(name, ip string) {
		putTaskGroup(t, "ns", name, "n1", nil)
		st := v4.TaskGroupStatus{Phase: v4.StatusRunning, Tasks: []v4.TaskStatus{{Name: "web", Status: v4.StatusRunning,
			Info: v4.ContainerInfo{Pid: 10, IPAddress: ip, NetworkMode: "bridge"}}}}
		b, _ := json.Marshal(st)
		wantStatus(t, agentCall(t, http.MethodPut, url+"/v1/agent/taskgroups/ns/"+name+"/status", string(b)), http.StatusOK)
		// The same report again is no new transition: no second event.
		wantStatus(t, agentCall(t, http.MethodPut, url+"/v1/agent/taskgroups/ns/"+name+"/status", string(b)), http.StatusOK)
	}
	report("0.web.ns.c.1", "")
	report("1.web.ns.c.1", "10.0.0.7")
	storetest.FlushEvents(t, testStore)
	events, err := testStore.ListEvents(context.Background(), v4.EventFilter{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	var noIP []v4.Event
	for _, e := range events {
		if e.Reason == "NoIP" {
			noIP = append(noIP, e)
		}
	}
	if len(noIP) != 1 {
		t.Fatalf("want one NoIP event, got %+v", noIP)
	}
	e := noIP[0]
	if e.Type != v4.EventWarning || e.Kind != v4.KindProcess || e.Name != "web" || e.TaskGroup != "0.web.ns.c.1" || e.Node != "n1" {
		t.Errorf("NoIP event %+v", e)
	}
}
