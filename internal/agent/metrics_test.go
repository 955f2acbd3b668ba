package agent

import (
	"bytes"
	"context"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver/fake"
	"github.com/berthhq/berth/internal/executor/health"
)

// TestAgentMetrics: the agent counts its starts, ends and running task groups; a scrape
// through the server (GET /v1/nodes/{name}/metrics) reads them, and passes Prometheus's
// lint.
func TestAgentMetrics(t *testing.T) {
	c := newCluster(t)
	drv := fake.New("process")
	startAgent(t, c, t.TempDir(), drv)
	runProcessTGs(t, "0.m")
	var body []byte
	waitFor(t, "the agent's metrics through the server", func() bool {
		var err error
		body, err = c.client().NodeMetrics(context.Background(), testNode)
		return err == nil && strings.Contains(string(body), `berth_agent_task_starts_total{driver="process",result="ok"} 1`)
	})
	for _, want := range []string{"berth_agent_task_groups 1", `berth_agent_task_start_duration_seconds_count{driver="process"} 1`, "go_goroutines"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
	if _, err := c.client().NodeMetrics(context.Background(), "nope"); err == nil || !strings.Contains(err.Error(), "node nope not found") {
		t.Errorf("unknown node: %v", err)
	}
}

// TestAgentMetricsCounts follows phases: an end counts once, running follows the task
// groups not ended, a removed one goes; health results and adoptions by result.
func TestAgentMetricsCounts(t *testing.T) {
	m := newAgentMetrics()
	for _, p := range []string{v4.StatusStaging, v4.StatusRunning, v4.StatusRunning} {
		m.reported("ns/a", p)
	}
	m.reported("ns/b", v4.StatusRunning)
	m.reported("ns/a", v4.StatusFailed)
	m.reported("ns/a", v4.StatusFailed)
	m.forget("ns/b")
	m.HealthChecked("HTTP", health.Result{Checked: true, Healthy: false})
	m.HealthChecked("HTTP", health.Result{Checked: false})
	m.adopted(true)
	m.TaskStarted("docker", time.Second, errors.New("no such image"))
	m.TaskStopped("docker", time.Second, nil)
	m.TaskStopped("docker", time.Second, errors.New("daemon gone"))
	m.DriverError("process", "wait")
	got := map[string]float64{}
	mfs, err := m.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, s := range mf.Metric {
			key := mf.GetName()
			for _, l := range s.Label {
				key += "," + l.GetValue()
			}
			switch {
			case s.Counter != nil:
				got[key] = s.Counter.GetValue()
			case s.Gauge != nil:
				got[key] = s.Gauge.GetValue()
			}
		}
	}
	for key, want := range map[string]float64{
		"berth_agent_task_groups": 0, "berth_agent_task_group_ends_total,Failed": 1,
		"berth_agent_health_checks_total,HTTP,unhealthy": 1, "berth_agent_health_checks_total,HTTP,grace": 1,
		"berth_agent_adoptions_total,adopted":    1,
		"berth_agent_task_stops_total,docker,ok": 1, "berth_agent_task_stops_total,docker,error": 1,
		"berth_agent_driver_errors_total,docker,start": 1, "berth_agent_driver_errors_total,docker,stop": 1,
		"berth_agent_driver_errors_total,process,wait": 1,
	} {
		if got[key] != want {
			t.Errorf("%s = %g, want %g (all: %v)", key, got[key], want, got)
		}
	}
}

// TestDashboardQueriesAgentMetrics: the agent metrics docs/grafana/berth.json queries are
// the agent's.
func TestDashboardQueriesAgentMetrics(t *testing.T) {
	b, err := os.ReadFile("../../docs/grafana/berth.json")
	if err != nil {
		t.Fatal(err)
	}
	m := newAgentMetrics() // vectors appear once they have a series
	m.TaskStarted("process", 0, nil)
	m.TaskStopped("process", 0, errors.New("x"))
	m.HealthChecked("HTTP", health.Result{})
	m.adopted(true)
	m.reported("ns/a", v4.StatusRunning)
	m.reported("ns/a", v4.StatusFailed)
	mfs, err := m.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, mf := range mfs {
		served[mf.GetName()] = true
	}
	names := regexp.MustCompile(`berth_agent_[a-z_]+`).FindAllString(string(b), -1)
	if len(names) < 4 {
		t.Fatalf("the dashboard queries only %v agent metrics", names)
	}
	for _, name := range names {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			name = strings.TrimSuffix(name, suffix)
		}
		if !served[name] {
			t.Errorf("the dashboard queries %s, which the agent does not serve", name)
		}
	}
}
