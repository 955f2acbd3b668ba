package agentapi

import (
	"slices"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestTasksWithoutIP(t *testing.T) {
	task := func(name, status, ip, mode string) v4.TaskStatus {
		return v4.TaskStatus{Name: name, Status: status, Info: v4.ContainerInfo{IPAddress: ip, NetworkMode: mode}}
	}
	cases := []struct {
		name  string
		tasks []v4.TaskStatus
		want  []string
	}{
		{"all have IPs", []v4.TaskStatus{task("a", v4.StatusRunning, "10.0.0.2", "bridge"), task("b", v4.StatusRunning, "10.0.0.2", "user")}, nil},
		{"one without", []v4.TaskStatus{task("a", v4.StatusRunning, "10.0.0.2", "bridge"), task("b", v4.StatusRunning, "", "user")}, []string{"b"}},
		{"network none is fine", []v4.TaskStatus{task("a", v4.StatusRunning, "", "none"), task("b", v4.StatusRunning, "", "NONE")}, nil},
		{"not running yet", []v4.TaskStatus{task("a", v4.StatusStarting, "", "bridge")}, nil},
		{"no tasks", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tasksWithoutIP(tc.tasks); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// A task group that becomes Running with a task without an IP gets one NoIP warning,
// naming its owner, task group and node; one with IPs gets none.
