package v4

import "testing"

func tasks(statuses ...string) []TaskStatus {
	out := make([]TaskStatus, len(statuses))
	for i, s := range statuses {
		out[i].Status = s
	}
	return out
}

func TestAggregateTaskGroup(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{nil, StatusStaging},
		{[]string{StatusRunning, StatusFailed, StatusKilling}, StatusFailed},
		{[]string{StatusRunning, StatusKilling, StatusError}, StatusKilling},
		{[]string{StatusRunning, StatusError}, StatusError},
		{[]string{StatusFinish, StatusFinish}, StatusFinish},
		{[]string{StatusKilled, StatusKilled}, StatusKilled},
		{[]string{StatusKilled, StatusFinish}, StatusFinish},
		{[]string{StatusRunning, StatusLost}, StatusLost},
		{[]string{StatusStaging, StatusStaging}, StatusStaging},
		{[]string{StatusStaging, StatusRunning}, StatusStarting},
		{[]string{StatusStarting, StatusRunning}, StatusStarting},
		{[]string{StatusRestarting, StatusRunning}, StatusRestarting},
		{[]string{StatusRunning, StatusRunning}, StatusRunning},
	}
	for _, tc := range tests {
		if got := AggregateTaskGroup(tasks(tc.in...)); got != tc.want {
			t.Errorf("%v: got %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestAggregateApplication(t *testing.T) {
	tests := []struct {
		in        []string
		instances int
		want      string
	}{
		{[]string{StatusRunning, StatusError}, 2, AppError},
		{[]string{StatusRunning, StatusFailed}, 2, AppAbnormal},
		{[]string{StatusRunning, StatusLost}, 2, AppAbnormal},
		{[]string{StatusRunning}, 2, AppAbnormal},
		{[]string{StatusFinish, StatusFinish}, 2, AppFinish},
		{[]string{StatusRunning, StatusStarting}, 2, AppDeploying},
		{[]string{StatusStaging}, 2, AppDeploying},
		{[]string{StatusRunning, StatusRestarting}, 2, AppRunning},
		{[]string{StatusRunning, StatusKilled}, 2, AppAbnormal},
		{nil, 2, AppAbnormal},
	}
	for _, tc := range tests {
		if got := AggregateApplication(tc.in, tc.instances); got != tc.want {
			t.Errorf("%v of %d: got %s, want %s", tc.in, tc.instances, got, tc.want)
		}
	}
}

func TestTaskNames(t *testing.T) {
	p := &PodSpec{Containers: []Container{{Name: "web"}, {}, {Name: "web"}}}
	if got := TaskNames(p); len(got) != 3 || got[0] != "web" || got[1] != "c1" || got[2] != "c2" {
		t.Errorf("containers: %v", got)
	}
	p = &PodSpec{Processes: []ProcessTask{{ProcName: "a"}, {ProcName: "a"}}}
	if got := TaskNames(p); got[0] != "a" || got[1] != "a-1" {
		t.Errorf("processes: %v", got)
	}
}

// An init task that finished counts no more while another task has a status.
func TestAggregateTaskGroupWithInitTasks(t *testing.T) {
	done := TaskStatus{Role: RoleInit, Status: StatusFinish}
	for _, tc := range []struct {
		tasks []TaskStatus
		want  string
	}{
		{[]TaskStatus{done, {Status: StatusRunning}}, StatusRunning},
		{[]TaskStatus{done, {Role: RoleInit, Status: StatusRunning}, {Status: StatusStaging}}, StatusStarting},
		{[]TaskStatus{done, {Status: StatusStaging}}, StatusStaging},
		{[]TaskStatus{done, {Status: StatusFailed}}, StatusFailed},
		{[]TaskStatus{done, done}, StatusFinish},
	} {
		if got := AggregateTaskGroup(tc.tasks); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.tasks, got, tc.want)
		}
	}
}
