package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

func revOf(tg *v4.TaskGroup) int64 {
	rev, _ := strconv.ParseInt(tg.Metadata.ResourceVersion, 10, 64)
	return rev
}

// cacheHolds waits until the server's task group cache reflects the store's task group.
func cacheHolds(t *testing.T, s *Server, tg *v4.TaskGroup) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.taskGroupCache.WaitFor(ctx, revOf(tg)); err != nil {
		t.Fatal(err)
	}
}

// A full report's writes share batches, and every one of them is written.
func TestAgentReportBatched(t *testing.T) {
	s, url := newTestServerOf(t, Config{})
	var rep v4.AgentReport
	var last *v4.TaskGroup
	for i := range 200 {
		name := fmt.Sprintf("%d.web.ns.c.1", i)
		last = putTaskGroup(t, "ns", name, "n1", nil)
		rep.TaskGroups = append(rep.TaskGroups, v4.TaskGroupReport{Namespace: "ns", Name: name,
			Status: v4.TaskGroupStatus{Phase: v4.StatusRunning, HostIP: "10.0.0.1"}})
	}
	cacheHolds(t, s, last)
	body, _ := json.Marshal(rep)
	wantStatus(t, agentCall(t, http.MethodPost, url+"/v1/agent/nodes/n1/report", string(body)), http.StatusOK)
	revs := map[string]bool{}
	for _, tr := range rep.TaskGroups {
		tg := getTaskGroup(t, "ns", tr.Name)
		if tg.Status.Phase != v4.StatusRunning {
			t.Fatalf("%s: %q", tr.Name, tg.Status.Phase)
		}
		revs[tg.Metadata.ResourceVersion] = true
	}
	t.Logf("200 status writes in %d transactions", len(revs))

	// The next full report repeats every status: nothing is written.
	before := map[string]string{}
	var latest *v4.TaskGroup
	for _, tr := range rep.TaskGroups {
		tg := getTaskGroup(t, "ns", tr.Name)
		before[tr.Name] = tg.Metadata.ResourceVersion
		if latest == nil || revOf(tg) > revOf(latest) {
			latest = tg
		}
	}
	cacheHolds(t, s, latest) // the report is compared with the cache
	wantStatus(t, agentCall(t, http.MethodPost, url+"/v1/agent/nodes/n1/report", string(body)), http.StatusOK)
	for _, tr := range rep.TaskGroups {
		if rv := getTaskGroup(t, "ns", tr.Name).Metadata.ResourceVersion; rv != before[tr.Name] {
			t.Fatalf("%s was written again by a report that changed nothing (%s -> %s)", tr.Name, before[tr.Name], rv)
		}
	}
}
