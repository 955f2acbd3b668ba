package agentapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
)

// benchStatuses stores n running task groups bound to node n1 and returns their names
// and a status for each round: the PIDs are new every round, so every report is written.
func benchStatuses(b *testing.B, a *API, n int) (names []string, status func(i, round int) v4.TaskGroupStatus) {
	b.Helper()
	for i := range n {
		names = append(names, fmt.Sprintf("%d.web.ns.c.1", i))
		createTaskGroup(b, "ns", names[i], "n1", v4.StatusRunning)
	}
	if err := httpapi.CacheCurrent(b.Context(), testStore, a.taskGroupCache); err != nil {
		b.Fatal(err)
	}
	return names, func(i, round int) v4.TaskGroupStatus {
		return v4.TaskGroupStatus{Phase: v4.StatusRunning, HostIP: "10.0.0.1", Tasks: []v4.TaskStatus{{Name: "weba",
			Status: v4.StatusRunning, Info: v4.ContainerInfo{Pid: 1000 + round*n + i, IPAddress: "10.1.0.1"}}}}
	}
}

// serve runs handler on a request with body, failing on an error or a non-200 answer.
func serve(b *testing.B, handler httpapi.HandlerFunc, method, path string, body []byte, values map[string]string) {
	r := httptest.NewRequest(method, path, bytes.NewReader(body))
	for k, v := range values {
		r.SetPathValue(k, v)
	}
	w := httptest.NewRecorder()
	if err := handler(w, r); err != nil || w.Code != http.StatusOK {
		b.Fatalf("%s %s: %d %v", method, path, w.Code, err)
	}
}

func mustJSON(b *testing.B, v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkStatusReport is the server's cost of a node reporting 2 and 20 changed
// statuses at once: one PUT each (the route older agents use for one status), or all in
// one report, or in one request of statuses (what an agent sends now). Each report changes every status, so each one writes etcd.
func BenchmarkStatusReport(b *testing.B) {
	// reports is every task group's status of a round, as a report or a list sends them.
	reports := func(names []string, status func(i, round int) v4.TaskGroupStatus, round int) []v4.TaskGroupReport {
		out := make([]v4.TaskGroupReport, len(names))
		for i, name := range names {
			out[i] = v4.TaskGroupReport{Namespace: "ns", Name: name, Status: status(i, round)}
		}
		return out
	}
	ways := []struct {
		name string
		send func(b *testing.B, a *API, names []string, status func(i, round int) v4.TaskGroupStatus, round int)
	}{
		{"put", func(b *testing.B, a *API, names []string, status func(i, round int) v4.TaskGroupStatus, round int) {
			for i, name := range names {
				serve(b, a.handleAgentStatus, http.MethodPut, "/v1/agent/taskgroups/ns/"+name+"/status",
					mustJSON(b, status(i, round)), map[string]string{"ns": "ns", "name": name})
			}
		}},
		{"report", func(b *testing.B, a *API, names []string, status func(i, round int) v4.TaskGroupStatus, round int) {
			rep := v4.AgentReport{TaskGroups: reports(names, status, round)}
			serve(b, a.handleAgentReport, http.MethodPost, "/v1/agent/nodes/n1/report", mustJSON(b, rep), map[string]string{"name": "n1"})
		}},
		{"statuses", func(b *testing.B, a *API, names []string, status func(i, round int) v4.TaskGroupStatus, round int) {
			req := v4.AgentStatuses{TaskGroups: reports(names, status, round)}
			serve(b, a.handleAgentStatuses, http.MethodPost, "/v1/agent/nodes/n1/statuses", mustJSON(b, req), map[string]string{"name": "n1"})
		}},
	}
	for _, n := range []int{2, 20} {
		for _, w := range ways {
			b.Run(fmt.Sprintf("%s/%d", w.name, n), func(b *testing.B) {
				a := benchAPI(b)
				a.bodies = httpapi.Bodies{Max: 1 << 20}
				names, status := benchStatuses(b, a, n)
				b.ReportAllocs()
				round := 0
				for b.Loop() {
					round++
					w.send(b, a, names, status, round)
				}
			})
		}
	}
}
