package health

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/testutil/loopback"
)

// scripted is a probe that answers from a script (true: healthy), then repeats the last.
type scripted struct {
	mu     sync.Mutex
	script []bool
	calls  int
}

func (s *scripted) probe(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok := s.script[min(s.calls, len(s.script)-1)]
	s.calls++
	if ok {
		return nil
	}
	return errors.New("down " + strconv.Itoa(s.calls))
}

func (s *scripted) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func collect(t *testing.T, p Policy, probe Probe, until func([]Result) bool) []Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var mu sync.Mutex
	var got []Result
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, p, probe, func(r Result) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, r)
			if until(got) {
				cancel()
			}
		})
	}()
	<-done
	mu.Lock()
	defer mu.Unlock()
	return got
}

func TestRun(t *testing.T) {
	fail := func(n int, msg string, kill bool) Result {
		return Result{Checked: true, ConsecutiveFailures: n, Message: msg, Kill: kill}
	}
	ok := Result{Checked: true, Healthy: true}
	tests := []struct {
		name   string
		policy Policy
		script []bool
		until  int // stop after this many reports
		want   []Result
		probes int // exact probe count, when > 0
	}{
		{"kills after exactly the limit", Policy{Interval: time.Millisecond, ConsecutiveFailures: 3}, []bool{false}, 99,
			[]Result{fail(1, "down 1", false), fail(2, "down 2", false), fail(3, "down 3", true)}, 3},
		{"success resets the count", Policy{Interval: time.Millisecond, ConsecutiveFailures: 2}, []bool{false, true, false, false}, 99,
			[]Result{fail(1, "down 1", false), ok, fail(1, "down 3", false), fail(2, "down 4", true)}, 4},
		{"zero never kills", Policy{Interval: time.Millisecond}, []bool{false}, 6,
			[]Result{fail(1, "down 1", false), fail(2, "down 2", false), fail(3, "down 3", false), fail(4, "down 4", false), fail(5, "down 5", false), fail(6, "down 6", false)}, 0},
		{"only changes are reported", Policy{Interval: time.Millisecond}, []bool{true, true, true, false, true}, 3,
			[]Result{ok, fail(1, "down 4", false), ok}, 0},
		{"grace ignores failures until the first success", Policy{Interval: time.Millisecond, Grace: time.Hour, ConsecutiveFailures: 2}, []bool{false, false, false, true, false, false}, 99,
			[]Result{ok, fail(1, "down 5", false), fail(2, "down 6", true)}, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &scripted{script: tt.script}
			got := collect(t, tt.policy, s.probe, func(rs []Result) bool { return len(rs) >= tt.until })
			if len(got) != len(tt.want) {
				t.Fatalf("results = %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("result %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
			if tt.probes > 0 {
				time.Sleep(10 * time.Millisecond) // a kill ends the loop: no more probes
				if n := s.count(); n != tt.probes {
					t.Errorf("probes = %d, want %d", n, tt.probes)
				}
			}
		})
	}
}

func TestGraceEnds(t *testing.T) {
	s := &scripted{script: []bool{false}}
	start := time.Now()
	got := collect(t, Policy{Interval: 5 * time.Millisecond, Grace: 50 * time.Millisecond}, s.probe, func(rs []Result) bool { return len(rs) >= 1 })
	if time.Since(start) < 50*time.Millisecond {
		t.Errorf("a failure was counted during the grace period")
	}
	if got[0].ConsecutiveFailures != 1 || got[0].Healthy || !got[0].Checked {
		t.Errorf("first counted result = %+v", got[0])
	}
	if s.count() < 5 {
		t.Errorf("probes during grace = %d, want checks to run meanwhile", s.count())
	}
}

func TestPolicyOf(t *testing.T) {
	p := PolicyOf(v4.HealthCheck{IntervalSeconds: 10, TimeoutSeconds: 20, GracePeriodSeconds: 3, ConsecutiveFailures: 2}, time.Millisecond)
	if p.Interval != 10*time.Millisecond || p.Timeout != 9*time.Millisecond || p.Grace != 3*time.Millisecond || p.ConsecutiveFailures != 2 {
		t.Errorf("policy = %+v", p)
	}
	if p := PolicyOf(v4.HealthCheck{}, time.Second); p.Interval != 60*time.Second || p.Timeout != 20*time.Second || p.Grace != 0 {
		t.Errorf("defaults = %+v", p)
	}
}

func TestLocal(t *testing.T) {
	checks := []v4.HealthCheck{{Type: v4.CheckRemoteHTTP}, {Type: v4.CheckTCP}, {Type: v4.CheckHTTP}}
	if c := Local(checks, v4.ProbeLiveness); c == nil || c.Type != v4.CheckTCP {
		t.Errorf("Local = %+v", c)
	}
	if c := Local(checks[:1], v4.ProbeLiveness); c != nil {
		t.Errorf("remote only: %+v", c)
	}
}

func TestHTTPProbe(t *testing.T) {
	var gotHost, gotHeader string
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		gotHost, gotHeader = r.Host, r.Header.Get("X-Check")
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/nowhere", http.StatusFound) })
	mux.HandleFunc("/down", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tlsSrv := httptest.NewTLSServer(mux)
	defer tlsSrv.Close()
	port := func(s *httptest.Server) int { return s.Listener.Addr().(*net.TCPAddr).Port }

	tests := []struct {
		name    string
		srv     *httptest.Server
		scheme  string
		path    string
		timeout time.Duration
		err     string
	}{
		{"200", srv, "http", "/ok", time.Second, ""},
		{"302 is healthy", srv, "http", "/redirect", time.Second, ""},
		{"503", srv, "http", "/down", time.Second, "HTTP GET http://127.0.0.1:%d/down returned 503"},
		{"404", srv, "http", "/missing", time.Second, "returned 404"},
		{"timeout", srv, "http", "/slow", 20 * time.Millisecond, "context deadline exceeded"},
		{"https without verification", tlsSrv, "https", "/ok", time.Second, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := v4.HealthCheck{Type: v4.CheckHTTP, HTTP: &v4.HTTPCheck{PortName: "web", Scheme: tt.scheme, Path: tt.path,
				Headers: map[string]string{"Host": "svc.example", "X-Check": "yes"}}}
			probe, err := NewProbe(c, Target{Host: "127.0.0.1", Ports: map[string]int{"web": port(tt.srv)}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			err = probe(ctx)
			want := tt.err
			if strings.Contains(want, "%d") {
				want = strings.ReplaceAll(want, "%d", strconv.Itoa(port(tt.srv)))
			}
			switch {
			case want == "" && err != nil:
				t.Errorf("unhealthy: %v", err)
			case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
				t.Errorf("err = %v, want %q", err, want)
			}
		})
	}
	if gotHost != "svc.example" || gotHeader != "yes" {
		t.Errorf("headers: host %q, X-Check %q", gotHost, gotHeader)
	}
}

func TestTCPProbe(t *testing.T) {
	open := loopback.ClosingPort(t)
	closed := loopback.FreePort(t)
	check := func(port int, name string) error {
		probe, err := NewProbe(v4.HealthCheck{Type: v4.CheckTCP, TCP: &v4.TCPCheck{Port: port, PortName: name}},
			Target{Host: "127.0.0.1", Ports: map[string]int{"open": open, "closed": closed}})
		if err != nil {
			return err
		}
		return probe(context.Background())
	}
	if err := check(0, "open"); err != nil {
		t.Errorf("open port: %v", err)
	}
	if err := check(open, "closed"); err != nil {
		t.Errorf("port wins over portName: %v", err)
	}
	if err := check(0, "closed"); err == nil || !strings.Contains(err.Error(), "TCP connect 127.0.0.1:"+strconv.Itoa(closed)) {
		t.Errorf("closed port: %v", err)
	}
	if err := check(0, "nope"); err == nil || !strings.Contains(err.Error(), `port "nope" is not a port of the task`) {
		t.Errorf("unknown port name: %v", err)
	}
}

func TestCommandProbe(t *testing.T) {
	exec := func(_ context.Context, cmd string) (driver.ExecResult, error) {
		switch cmd {
		case "ok":
			return driver.ExecResult{}, nil
		case "fail":
			return driver.ExecResult{ExitCode: 3, Output: []byte("not ready\n")}, nil
		}
		return driver.ExecResult{}, errors.New("no such task")
	}
	for cmd, want := range map[string]string{
		"ok":    "",
		"fail":  `command "fail" exited with code 3: not ready`,
		"error": `command "error": no such task`,
	} {
		probe, err := NewProbe(v4.HealthCheck{Type: v4.CheckCommand, Command: &v4.CommandCheck{Value: cmd}}, Target{Exec: exec})
		if err != nil {
			t.Fatal(err)
		}
		err = probe(context.Background())
		if (want == "") != (err == nil) || err != nil && err.Error() != want {
			t.Errorf("%s: err = %v, want %q", cmd, err, want)
		}
	}
	if _, err := NewProbe(v4.HealthCheck{Type: v4.CheckRemoteTCP}, Target{}); err == nil {
		t.Error("a remote check built a local probe")
	}
}
