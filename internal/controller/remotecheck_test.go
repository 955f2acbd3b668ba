package controller

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// remoteTG is a Running process task group on 127.0.0.1 whose port "http" is port, with
// the given remote checks.
func remoteTG(name string, port int, checks ...v4.HealthCheck) *v4.TaskGroup {
	return &v4.TaskGroup{
		Metadata: v4.ObjectMeta{Name: name, Namespace: "rc"},
		Spec: v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindProcess, Name: "web"}, Node: "n1",
			Labels: map[string]string{"app": "web"}, Ports: []v4.AllocatedPort{{Name: "http", HostPort: port}},
			Template: v4.PodTemplate{Spec: v4.PodSpec{Processes: []v4.ProcessTask{{ProcName: "web",
				Ports: []v4.Port{{Name: "http"}}, HealthChecks: checks}}}}},
		Status: v4.TaskGroupStatus{Phase: v4.StatusRunning, HostIP: "127.0.0.1"},
	}
}

func getTG(t *testing.T, ns, name string) *v4.TaskGroup {
	t.Helper()
	o, err := testStore.Get(context.Background(), v4.KindTaskGroup, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return o.(*v4.TaskGroup)
}

// The leader probes REMOTE_HTTP and REMOTE_TCP checks and records their result in the
// task group's status, which decides its readiness; a stopped instance is not probed.
func TestRemoteChecks(t *testing.T) {
	var failing atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" || failing.Load() {
			http.Error(w, "not today", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	_, p, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(p)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()

	var ctl *RemoteCheckController
	e := startEnv(t, func(e *env) runner {
		opts := e.opts()
		opts.HealthTimeUnit = 20 * time.Millisecond
		ctl = NewRemoteCheckController(testStore, opts)
		return ctl
	})
	httpCheck := v4.HealthCheck{Type: v4.CheckRemoteHTTP, IntervalSeconds: 2, TimeoutSeconds: 1, HTTP: &v4.HTTPCheck{PortName: "http", Path: "/healthz"}}
	putTG(t, remoteTG("0.web.rc.c.1", port, httpCheck))
	putTG(t, remoteTG("1.web.rc.c.1", port, v4.HealthCheck{Type: v4.CheckRemoteTCP, IntervalSeconds: 2, TimeoutSeconds: 1,
		TCP: &v4.TCPCheck{Port: closedPort}}))

	remote := func(name string) *v4.RemoteHealth { return getTG(t, "rc", name).Status.Remote }
	e.eventually("the HTTP check to pass", func() bool { r := remote("0.web.rc.c.1"); return r != nil && r.Healthy })
	if ready, why := getTG(t, "rc", "0.web.rc.c.1").Readiness(); !ready {
		t.Errorf("a passing instance is not ready: %s", why)
	}
	e.eventually("the TCP check to fail", func() bool {
		r := remote("1.web.rc.c.1")
		return r != nil && !r.Healthy && strings.Contains(r.Message, "tcp 127.0.0.1:"+strconv.Itoa(closedPort))
	})
	if ready, why := getTG(t, "rc", "1.web.rc.c.1").Readiness(); ready || !strings.HasPrefix(why, "remote health check failing") {
		t.Errorf("a failing instance: ready %v (%s)", ready, why)
	}

	failing.Store(true)
	e.eventually("the HTTP check to fail", func() bool {
		r := remote("0.web.rc.c.1")
		return r != nil && !r.Healthy && strings.Contains(r.Message, "503")
	})
	failing.Store(false)
	e.eventually("the HTTP check to pass again", func() bool { r := remote("0.web.rc.c.1"); return r != nil && r.Healthy })

	tg := getTG(t, "rc", "0.web.rc.c.1")
	tg.Spec.Desired = v4.DesiredStopped
	putTG(t, tg)
	e.eventually("the stopped instance to be checked no more", func() bool {
		for _, k := range ctl.running() {
			if k == "rc/0.web.rc.c.1" {
				return false
			}
		}
		return true
	})
}
