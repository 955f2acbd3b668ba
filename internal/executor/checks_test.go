package executor

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/testutil/loopback"
)

// healthServer answers /healthz with code, counting requests.
type healthServer struct {
	*httptest.Server
	code  atomic.Int32
	calls atomic.Int32
}

func newHealthServer(t *testing.T, code int) *healthServer {
	s := &healthServer{}
	s.code.Store(int32(code))
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		w.WriteHeader(int(s.code.Load()))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *healthServer) port() int { return s.Listener.Addr().(*net.TCPAddr).Port }

// checkedTG is a process pod whose process has check, with port "http" on port.
func checkedTG(port int, check v4.HealthCheck) *v4.TaskGroup {
	tg := processTG("p", v4.ProcessTask{ProcName: "svc", StartCmd: "./svc",
		Ports: []v4.Port{{Name: "http", HostPort: port}}, HealthChecks: []v4.HealthCheck{{Type: v4.CheckRemoteHTTP}, check}},
		v4.ProcessTask{ProcName: "sidecar", StartCmd: "./sidecar"})
	tg.Spec.Ports = []v4.AllocatedPort{{Name: "http", HostPort: port}}
	return tg
}

func httpCheck(failures int) v4.HealthCheck {
	return v4.HealthCheck{Type: v4.CheckHTTP, IntervalSeconds: 2, TimeoutSeconds: 1, ConsecutiveFailures: failures,
		HTTP: &v4.HTTPCheck{PortName: "http", Path: "/healthz"}}
}

func healthy(st v4.TaskGroupStatus) bool {
	return st.Tasks[0].Healthy != nil && *st.Tasks[0].Healthy
}

func unhealthy(n int) func(v4.TaskGroupStatus) bool {
	return func(st v4.TaskGroupStatus) bool {
		return st.Tasks[0].Healthy != nil && !*st.Tasks[0].Healthy && st.Tasks[0].ConsecutiveFailures >= n
	}
}

func TestHealthyChecks(t *testing.T) {
	srv := newHealthServer(t, http.StatusOK)
	tcpPort := loopback.ClosingPort(t)
	tests := []struct {
		name  string
		port  int
		check v4.HealthCheck
		exec  bool
	}{
		{"HTTP 200", srv.port(), httpCheck(3), false},
		{"TCP", tcpPort, v4.HealthCheck{Type: v4.CheckTCP, IntervalSeconds: 2, TimeoutSeconds: 1, TCP: &v4.TCPCheck{PortName: "http"}}, false},
		{"COMMAND exit 0", 1, v4.HealthCheck{Type: v4.CheckCommand, IntervalSeconds: 2, TimeoutSeconds: 1, Command: &v4.CommandCheck{Value: "./check.sh"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			if tt.exec {
				h.proc.SetExec(id("p", "svc"), func(context.Context, string) (driver.ExecResult, error) { return driver.ExecResult{}, nil })
			}
			h.run(checkedTG(tt.port, tt.check))
			st := h.rec.wait(t, "p", "healthy", healthy)
			if st.Phase != v4.StatusRunning || st.Healthy == nil || !*st.Healthy {
				t.Errorf("group = %s healthy %v", st.Phase, st.Healthy)
			}
			if info := st.Tasks[0].Info; !info.Healthy || !info.IsChecked || info.ConsecutiveFailureTimes != 0 {
				t.Errorf("info = %+v", info)
			}
			if st.Tasks[1].Healthy != nil {
				t.Error("the unchecked task has a health result")
			}
		})
	}
}

func TestUnhealthyChecks(t *testing.T) {
	srv := newHealthServer(t, http.StatusServiceUnavailable)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	closed := loopback.FreePort(t)
	tests := []struct {
		name  string
		port  int
		check v4.HealthCheck
		msg   string
	}{
		{"HTTP 503", srv.port(), httpCheck(0), fmt.Sprintf("HTTP GET http://127.0.0.1:%d/healthz returned 503", srv.port())},
		{"HTTP timeout", slow.Listener.Addr().(*net.TCPAddr).Port, httpCheck(0), "context deadline exceeded"},
		{"TCP refused", closed, v4.HealthCheck{Type: v4.CheckTCP, IntervalSeconds: 2, TimeoutSeconds: 1, TCP: &v4.TCPCheck{PortName: "http"}}, "connection refused"},
		{"COMMAND exit 1", 1, v4.HealthCheck{Type: v4.CheckCommand, IntervalSeconds: 2, TimeoutSeconds: 1, Command: &v4.CommandCheck{Value: "./check.sh"}}, `command "./check.sh" exited with code 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.proc.SetExec(id("p", "svc"), func(context.Context, string) (driver.ExecResult, error) { return driver.ExecResult{ExitCode: 1}, nil })
			h.run(checkedTG(tt.port, tt.check))
			// consecutiveFailures 0: failures are counted and reported, nothing is killed.
			st := h.rec.wait(t, "p", "4 failures", unhealthy(4))
			if st.Phase != v4.StatusRunning || st.Healthy == nil || *st.Healthy {
				t.Errorf("group = %s healthy %v", st.Phase, st.Healthy)
			}
			ts := st.Tasks[0]
			if !strings.Contains(ts.HealthMessage, tt.msg) || ts.Info.Healthy || !ts.Info.IsChecked || ts.Info.ConsecutiveFailureTimes != ts.ConsecutiveFailures {
				t.Errorf("task = %+v", ts)
			}
			if _, ok := h.proc.Stopped(id("p", "svc")); ok {
				t.Error("stopped although consecutiveFailures is 0")
			}
		})
	}
}

func TestHealthKillAfterExactlyConsecutiveFailures(t *testing.T) {
	srv := newHealthServer(t, http.StatusServiceUnavailable)
	h := newHarness(t)
	h.run(checkedTG(srv.port(), httpCheck(3)))
	st := h.rec.waitPhase(t, "p", v4.StatusFailed)

	if n := srv.calls.Load(); n != 3 {
		t.Errorf("probes = %d, want 3", n)
	}
	want := fmt.Sprintf("health check failed 3 times: HTTP GET http://127.0.0.1:%d/healthz returned 503", srv.port())
	if st.Tasks[0].Message != want || st.Message != "task svc: "+want || !st.HealthKilled {
		t.Errorf("status = %q / %q, healthKilled %v", st.Tasks[0].Message, st.Message, st.HealthKilled)
	}
	if st.Tasks[1].Status != v4.StatusFailed || st.Tasks[1].Message != "stopped: task svc: "+want {
		t.Errorf("sidecar = %+v", st.Tasks[1])
	}
	if st.Tasks[0].Info.ConsecutiveFailureTimes != 3 || !st.Tasks[0].Info.IsChecked {
		t.Errorf("info = %+v", st.Tasks[0].Info)
	}
	for _, task := range []string{"svc", "sidecar"} {
		if grace, ok := h.proc.Stopped(id("p", task)); !ok || grace != 5*time.Second {
			t.Errorf("%s stopped = %v %v, want the kill grace", task, grace, ok)
		}
	}
	// Every count was reported on the way.
	var counts []int
	for _, r := range h.rec.all("p") {
		if n := r.Tasks[0].ConsecutiveFailures; len(counts) == 0 || counts[len(counts)-1] != n {
			counts = append(counts, n)
		}
	}
	if fmt.Sprint(counts) != "[0 1 2 3]" {
		t.Errorf("reported failure counts = %v", counts)
	}
	time.Sleep(10 * testUnit)
	if n := srv.calls.Load(); n != 3 {
		t.Errorf("probes after the kill: %d", n)
	}
}

func TestHealthGraceAndFlips(t *testing.T) {
	srv := newHealthServer(t, http.StatusServiceUnavailable)
	h := newHarness(t)
	check := httpCheck(0)
	check.GracePeriodSeconds = 1000 // failures are ignored until the first success
	h.run(checkedTG(srv.port(), check))
	h.rec.waitPhase(t, "p", v4.StatusRunning)
	for srv.calls.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	if st, _ := h.e.Status(testNS, "p"); st.Tasks[0].Healthy != nil || st.Healthy != nil {
		t.Fatalf("a failure during the grace period was counted: %+v", st.Tasks[0])
	}
	srv.code.Store(http.StatusOK)
	h.rec.wait(t, "p", "healthy", healthy)
	srv.code.Store(http.StatusInternalServerError) // grace is over: this counts
	h.rec.wait(t, "p", "unhealthy", unhealthy(1))
	srv.code.Store(http.StatusNoContent)
	h.rec.wait(t, "p", "healthy again", healthy)

	var flips []string
	for _, r := range h.rec.all("p") {
		v := "nil"
		if r.Healthy != nil {
			v = fmt.Sprint(*r.Healthy)
		}
		if len(flips) == 0 || flips[len(flips)-1] != v {
			flips = append(flips, v)
		}
	}
	if fmt.Sprint(flips) != "[nil true false true]" {
		t.Errorf("group health = %v", flips)
	}
}

func TestKillStopsHealthChecks(t *testing.T) {
	srv := newHealthServer(t, http.StatusOK)
	h := newHarness(t)
	h.run(checkedTG(srv.port(), httpCheck(3)))
	h.rec.wait(t, "p", "healthy", healthy)
	h.e.Kill(testNS, "p")
	n := srv.calls.Load()
	time.Sleep(10 * testUnit)
	if srv.calls.Load() != n {
		t.Error("checks run after the kill")
	}
	if st, _ := h.e.Status(testNS, "p"); st.Phase != v4.StatusFinish {
		t.Errorf("phase = %s", st.Phase)
	}
}

func TestCheckTargetBridge(t *testing.T) {
	h := newHarness(t)
	tg := containerTG("web", "a")
	tg.Spec.Template.Spec.NetworkMode = "BRIDGE"
	tg.Spec.Template.Spec.Containers[0].Ports = []v4.Port{{Name: "http", ContainerPort: 8080, HostPort: 31000}}
	tg.Spec.Ports = []v4.AllocatedPort{{Name: "http", HostPort: 31000}}
	p := h.e.newPod(tg)
	bridge := p.target(0, v4.ContainerInfo{IPAddress: "172.17.0.5"})
	if bridge.Host != "172.17.0.5" || bridge.Ports["http"] != 8080 {
		t.Errorf("bridge target = %+v", bridge)
	}
	tg.Spec.Template.Spec.NetworkMode = "HOST"
	p = h.e.newPod(tg)
	host := p.target(0, v4.ContainerInfo{IPAddress: testHostIP})
	if host.Host != "127.0.0.1" || host.Ports["http"] != 31000 {
		t.Errorf("host target = %+v", host)
	}
}
