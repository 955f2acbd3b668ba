package lbgroup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/netsvc"
	"github.com/berthhq/berth/internal/testutil/loopback"
	"github.com/berthhq/berth/internal/testutil/requires"
)

// serviceWarnings collects the warnings a group reports on services.
type serviceWarnings struct {
	mu   sync.Mutex
	list []string
}

func (w *serviceWarnings) add(ns, name, reason, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, fmt.Sprintf("%s/%s %s: %s", ns, name, reason, msg))
}

func (w *serviceWarnings) get() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.list)
}

// inNamespace moves a service and its endpoints to ns (another tenant's).
func inNamespace(ns string, s *v4.Service, e *v4.Endpoints) (*v4.Service, *v4.Endpoints) {
	s.Metadata.Namespace, e.Metadata.Namespace = ns, ns
	return s, e
}

// holdPort listens on a loopback port, as another program of the node would, until
// the returned function is called.
func holdPort(t *testing.T) (int, func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().(*net.TCPAddr).Port, func() { l.Close() }
}

// echoes says whether port answers a line with want's prefix.
func echoes(port int, want string) error {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintln(c, "hello")
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return fmt.Errorf("port %d: %w", port, err)
	}
	if line != want+":hello\n" {
		return fmt.Errorf("port %d answered %q, want %s", port, line, want)
	}
	return nil
}

// One tenant's service on a port another program holds is left out of the group, with a
// Warning on that service only, while the other tenant's services of the group are
// served; once the port is free, the next update serves it too.
func TestUnbindablePortLeavesTheRestServed(t *testing.T) {
	requires.HAProxy(t)
	ctx := context.Background()
	b1, _ := httpBackend(t, "b1")
	echoA, echoB := echoBackend(t, "a"), echoBackend(t, "b")
	httpPort, free := loopback.FreePort(t), loopback.FreePort(t)
	taken, release := holdPort(t)

	cat := netsvc.NewCatalog("cluster.local")
	cat.Put(svc("web", nil, v4.ServicePort{Name: "http", Protocol: "http", ServicePort: 80, DomainName: "web.example.com"}))
	cat.Put(webEndpoints(b1))
	s, e := inNamespace("tenant-a", svc("db", nil, v4.ServicePort{Name: "pg", Protocol: "tcp", ServicePort: taken}), eps("db", "pg", "db@"+echoA))
	cat.Put(s)
	cat.Put(e)
	s, e = inNamespace("tenant-b", svc("api", nil, v4.ServicePort{Name: "line", Protocol: "tcp", ServicePort: free}), eps("api", "line", "api@"+echoB))
	cat.Put(s)
	cat.Put(e)

	dir := t.TempDir()
	stopHAProxy(t, dir)
	var nodeWarned warnings
	var svcWarned serviceWarnings
	g, err := New(cat, Config{Group: "g1", Dir: dir, BindAddr: "127.0.0.1", HTTPPort: httpPort, Warn: nodeWarned.add, WarnService: svcWarned.add})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second update changes nothing and reports nothing again
		if err := g.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	pids := g.proc.running()
	if len(pids) != 1 {
		t.Fatalf("haproxy pids %v", pids)
	}
	if err := echoes(free, "b"); err != nil {
		t.Errorf("tenant-b's service: %v", err)
	}
	if got := seen(t, httpPort, 2, 1); !slices.Equal(got, []string{"b1"}) {
		t.Errorf("web answered by %v", got)
	}
	if strings.Contains(g.Config(), fmt.Sprintf("tcp-%d", taken)) {
		t.Errorf("the held port is in the configuration:\n%s", g.Config())
	}
	w := svcWarned.get()
	if len(w) != 1 || !strings.HasPrefix(w[0], "tenant-a/db LoadBalancerPortUnavailable") ||
		!strings.Contains(w[0], fmt.Sprint(taken)) || !strings.Contains(w[0], "address already in use") {
		t.Fatalf("service warnings %q", w)
	}
	if w := nodeWarned.get(); len(w) > 0 {
		t.Errorf("node warnings %q", w)
	}

	// The port is free: the next update serves it.
	release()
	if err := g.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := echoes(taken, "a"); err != nil {
		t.Errorf("tenant-a's service once its port is free: %v", err)
	}
	if err := echoes(free, "b"); err != nil {
		t.Errorf("tenant-b's service after the reload: %v", err)
	}
	if now := g.proc.running(); slices.Equal(now, pids) {
		t.Errorf("no reload: haproxy %v", now)
	}
	if w := svcWarned.get(); len(w) != 1 {
		t.Errorf("service warnings %q", w)
	}
}

// A port another program takes after the group tried it makes HAProxy's start fail: the
// group starts it again without that frontend, so the others are still served.
func TestPortTakenAfterTheProbeIsLeftOut(t *testing.T) {
	requires.HAProxy(t)
	ctx := context.Background()
	echoA, echoB := echoBackend(t, "a"), echoBackend(t, "b")
	free := loopback.FreePort(t)
	taken, _ := holdPort(t)
	cat := netsvc.NewCatalog("cluster.local")
	cat.Put(svc("api", nil, v4.ServicePort{Name: "line", Protocol: "tcp", ServicePort: free}))
	cat.Put(eps("api", "line", "api@"+echoB))
	dir := t.TempDir()
	stopHAProxy(t, dir)
	var nodeWarned warnings
	var svcWarned serviceWarnings
	g, err := New(cat, Config{Group: "g1", Dir: dir, BindAddr: "127.0.0.1", HTTPPort: loopback.FreePort(t), Warn: nodeWarned.add, WarnService: svcWarned.add})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	pids := g.proc.running()
	g.probe = func(string, int) error { return nil } // the port is taken after the probe
	s, e := inNamespace("tenant-a", svc("db", nil, v4.ServicePort{Name: "pg", Protocol: "tcp", ServicePort: taken}), eps("db", "pg", "db@"+echoA))
	cat.Put(s)
	cat.Put(e)
	s, e = inNamespace("tenant-b", svc("late", nil, v4.ServicePort{Name: "line", Protocol: "tcp", ServicePort: loopback.FreePort(t)}), eps("late", "line", "late@"+echoB))
	cat.Put(s)
	cat.Put(e)
	if err := g.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if now := g.proc.running(); len(now) != 1 || slices.Equal(now, pids) {
		t.Fatalf("haproxy %v, was %v: want one reloaded", now, pids)
	}
	if err := echoes(free, "b"); err != nil {
		t.Error(err)
	}
	if !strings.Contains(g.Config(), "tenant-b.late.line") || strings.Contains(g.Config(), fmt.Sprintf("tcp-%d", taken)) {
		t.Errorf("configuration:\n%s", g.Config())
	}
	w := svcWarned.get()
	if len(w) != 1 || !strings.HasPrefix(w[0], "tenant-a/db LoadBalancerPortUnavailable") || !strings.Contains(w[0], "cannot bind socket") {
		t.Errorf("service warnings %q", w)
	}
	if w := nodeWarned.get(); len(w) > 0 {
		t.Errorf("node warnings %q", w)
	}
}

// leaveOut drops the frontends whose port the probe refuses, and their backends; the
// ports the running HAProxy serves are not tried; the HTTP port takes every route.
func TestLeaveOutUnbindableFrontends(t *testing.T) {
	exports := []ExportService{
		{Namespace: "a", Name: "web", Balance: "roundrobin", MaxConn: 10, Ports: []ExportPort{{Name: "http", Protocol: "http", VHost: "a.example.com"}}},
		{Namespace: "a", Name: "db", Balance: "roundrobin", MaxConn: 10, Ports: []ExportPort{{Name: "pg", Protocol: "tcp", ServicePort: 5432}}},
		{Namespace: "b", Name: "mq", Balance: "roundrobin", MaxConn: 10, Ports: []ExportPort{{Name: "amqp", Protocol: "tcp", ServicePort: 5672}}},
	}
	held := errors.New("address already in use")
	var tried []int
	probe := func(_ string, port int) error {
		tried = append(tried, port)
		if port == 5432 || port == settings.HTTPPort {
			return held
		}
		return nil
	}
	p := newPlan(exports, settings, nil)
	out := p.leaveOut(settings, map[int]bool{5672: true}, probe, nil)
	if len(out) != 2 || out[0].port != settings.HTTPPort || out[0].service != "" || out[1].key() != "a/db:5432" {
		t.Fatalf("left out %+v", out)
	}
	if len(p.routes) != 0 || len(p.listeners) != 1 || p.listeners[0].port != 5672 || len(p.backends) != 1 || p.backends[0].name != "b.mq.amqp" {
		t.Fatalf("plan %+v", p)
	}
	if !slices.Equal(tried, []int{settings.HTTPPort, 5432}) {
		t.Errorf("tried %v: the served port is not tried", tried)
	}
	// A port HAProxy's start could not bind is left out whatever the probe says.
	p = newPlan(exports, settings, nil)
	out = p.leaveOut(settings, nil, func(string, int) error { return nil }, map[int]error{5672: held})
	if len(out) != 1 || out[0].key() != "b/mq:5672" || len(p.routes) != 1 {
		t.Fatalf("left out %+v", out)
	}
}

func TestFailedBindsReadsHAProxysMessage(t *testing.T) {
	msg := "[ALERT]    (5723) : Binding [/x/haproxy.cfg:9] for frontend tcp-40469: cannot bind socket (Address already in use) for [127.0.0.1:40469]\n" +
		"[ALERT]    (5723) : Starting frontend http: cannot bind socket [0.0.0.0:8080]\n" +
		"[ALERT]    (5723) : [haproxy.main()] Some protocols failed to start their listeners! Exiting."
	got := failedBinds(msg, settings)
	if len(got) != 2 || got[40469] == nil || got[settings.HTTPPort] == nil || !strings.Contains(got[40469].Error(), "Address already in use") {
		t.Fatalf("failed binds %v", got)
	}
}

// The probe refuses a port a listener holds, and takes one nobody holds.
func TestProbeBind(t *testing.T) {
	taken, _ := holdPort(t)
	if err := probeBind("127.0.0.1", taken); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("a held port: %v", err)
	}
	if err := probeBind("127.0.0.1", loopback.FreePort(t)); err != nil {
		t.Errorf("a free port: %v", err)
	}
	if err := probeBind("", taken); err == nil {
		t.Errorf("every address over a loopback listener: no error")
	}
}
