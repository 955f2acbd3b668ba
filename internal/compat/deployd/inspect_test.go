package deployd

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// A task's runtime view, from each driver's report: docker's own status, a process
// driver's, none yet.
func TestRuntimeOf(t *testing.T) {
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tg := &v4.TaskGroup{Spec: v4.TaskGroupSpec{Node: "node-1"}, Status: v4.TaskGroupStatus{HostIP: "10.0.0.1"}}
	for _, c := range []struct {
		name        string
		ts          v4.TaskStatus
		want        string // "" for no runtime
		running     bool
		pid         int
		containerNm string
	}{
		{"docker, running", v4.TaskStatus{Name: "c0", Status: v4.StatusRunning,
			Info: v4.ContainerInfo{ID: "abc", Name: "web-1", Status: "running", Pid: 7, StartAt: started}}, "running", true, 7, "/web-1"},
		{"docker, paused counts as running", v4.TaskStatus{Name: "c0", Info: v4.ContainerInfo{ID: "abc", Status: "paused", Pid: 7}}, "paused", true, 7, "/c0"},
		{"docker, exited", v4.TaskStatus{Name: "c0", Status: v4.StatusFailed,
			Info: v4.ContainerInfo{ID: "abc", Name: "/web-1", Status: "exited", Pid: 7, ExitCode: 2}}, "exited", false, 0, "/web-1"},
		{"no docker status: the phase says", v4.TaskStatus{Name: "p", Status: v4.StatusRunning, Info: v4.ContainerInfo{ID: "p-1", Pid: 9}}, "running", true, 9, "/p"},
		{"not reported yet", v4.TaskStatus{Name: "c0", Status: v4.StatusStaging}, "", false, 0, ""},
	} {
		rt := runtimeOf(tg, c.ts, "img")
		if c.want == "" {
			if rt != nil {
				t.Errorf("%s: runtime %+v, want none", c.name, rt)
			}
			continue
		}
		if rt == nil || rt.State.Status != c.want || rt.State.Running != c.running || rt.State.Pid != c.pid || rt.Name != c.containerNm ||
			rt.Node != (RuntimeNode{Name: "node-1", IP: "10.0.0.1"}) || rt.Config.Image != "img" || rt.State.ExitCode != c.ts.Info.ExitCode {
			t.Errorf("%s: runtime %+v", c.name, rt)
		}
	}
	// docker inspect's keys, which deployd's clients read.
	b, _ := json.Marshal(runtimeOf(tg, v4.TaskStatus{Info: v4.ContainerInfo{ID: "abc", Status: "running", StartAt: started}}, ""))
	for _, key := range []string{`"Id":"abc"`, `"Name":"/"`, `"State":{"Status":"running","Running":true`, `"StartedAt":"2026-01-02T03:04:05Z"`, `"FinishedAt":"0001-01-01T00:00:00Z"`, `"NetworkSettings":{"IPAddress":""}`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("runtime JSON %s lacks %s", b, key)
		}
	}
}
