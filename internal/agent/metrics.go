package agent

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/executor/health"
	"github.com/berthhq/berth/internal/prom"
)

// The agent's metrics (docs/agent.md, "Metrics"): served on its endpoint to the servers,
// which forward them at GET /v1/nodes/{name}/metrics, so a scrape needs a token like any
// other read. No label names a task group or a task: their number must not follow the
// node's workload.
type agentMetrics struct {
	registry      *prometheus.Registry
	starts        *prometheus.CounterVec
	startDuration *prometheus.HistogramVec
	stops         *prometheus.CounterVec
	stopDuration  *prometheus.HistogramVec
	driverErrors  *prometheus.CounterVec
	ends          *prometheus.CounterVec
	checks        *prometheus.CounterVec
	adoptions     *prometheus.CounterVec
	running       prometheus.Gauge
	flexFailures  *prometheus.CounterVec

	mu    sync.Mutex
	phase map[string]string // task group -> last phase reported, to count its ends once
}

func newAgentMetrics() *agentMetrics {
	m := &agentMetrics{
		starts: prom.CounterVec("berth_agent_task_starts_total",
			"Tasks the agent's drivers started, by driver and result (ok, error).", "driver", "result"),
		startDuration: prom.HistogramVec("berth_agent_task_start_duration_seconds",
			"Time a driver took to start a task (a container's create and start, a process's fork and exec), by driver.",
			prometheus.ExponentialBuckets(0.001, 4, 9), "driver"), // 1 ms to 65 s
		stops: prom.CounterVec("berth_agent_task_stops_total",
			"Tasks the agent's drivers stopped (kills, scale-downs, pods ending), by driver and result (ok, error).", "driver", "result"),
		stopDuration: prom.HistogramVec("berth_agent_task_stop_duration_seconds",
			"Time a driver took to stop a task, the kill grace period included, by driver.",
			prometheus.ExponentialBuckets(0.001, 4, 9), "driver"),
		driverErrors: prom.CounterVec("berth_agent_driver_errors_total",
			"Driver calls that failed, by driver and operation (start, stop, wait, remove).", "driver", "op"),
		ends: prom.CounterVec("berth_agent_task_group_ends_total",
			"Task groups that ended on the node, by phase (Finish, Failed, Killed, Error, Lost).", "phase"),
		checks: prom.CounterVec("berth_agent_health_checks_total",
			"Local health check results, by check type (HTTP, TCP, COMMAND) and result (healthy, unhealthy, grace: a failure still ignored).", "check", "result"),
		adoptions: prom.CounterVec("berth_agent_adoptions_total",
			"Task groups found running at the agent's start, by result (adopted, stopped: nothing the executor could take over).", "result"),
		running: prom.Gauge("berth_agent_task_groups", "Task groups the agent's executor runs now (not ended)."),
		flexFailures: prom.CounterVec("berth_agent_flexvolume_unmount_failures_total",
			"Failed unmounts (or detaches) of the FlexVolumes of pods the node no longer runs, each retried with backoff, by driver.", "driver"),
		phase: map[string]string{},
	}
	m.registry = prom.NewProcessRegistry(m.starts, m.startDuration, m.stops, m.stopDuration, m.driverErrors, m.ends, m.checks, m.adoptions,
		m.running, m.flexFailures)
	return m
}

func (m *agentMetrics) handler() http.Handler { return prom.Handler(m.registry) }

// TaskStarted counts a driver's start (executor.Observer).
func (m *agentMetrics) TaskStarted(driver string, took time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.starts.WithLabelValues(driver, result).Inc()
	m.startDuration.WithLabelValues(driver).Observe(took.Seconds())
	if err != nil {
		m.driverErrors.WithLabelValues(driver, "start").Inc()
	}
}

// TaskStopped counts a driver's stop (executor.Observer).
func (m *agentMetrics) TaskStopped(driver string, took time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
		m.driverErrors.WithLabelValues(driver, "stop").Inc()
	}
	m.stops.WithLabelValues(driver, result).Inc()
	m.stopDuration.WithLabelValues(driver).Observe(took.Seconds())
}

// DriverError counts a failed driver call (executor.Observer).
func (m *agentMetrics) DriverError(driver, op string) {
	m.driverErrors.WithLabelValues(driver, op).Inc()
}

// HealthChecked counts a local check's result (executor.Observer).
func (m *agentMetrics) HealthChecked(check string, r health.Result) {
	result := "healthy"
	switch {
	case !r.Checked:
		result = "grace"
	case !r.Healthy:
		result = "unhealthy"
	}
	m.checks.WithLabelValues(check, result).Inc()
}

// adopted counts one task group found running at start.
func (m *agentMetrics) adopted(ok bool) {
	result := "adopted"
	if !ok {
		result = "stopped"
	}
	m.adoptions.WithLabelValues(result).Inc()
}

// reported follows a task group's phase: an end is counted once, when it is first
// reported; running is the number of task groups not ended.
func (m *agentMetrics) reported(key, phase string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	prev, known := m.phase[key]
	if prev == phase {
		return
	}
	m.phase[key] = phase
	switch ended, wasEnded := v4.Terminal(phase), known && v4.Terminal(prev); {
	case ended && !wasEnded:
		m.ends.WithLabelValues(phase).Inc()
		if known {
			m.running.Dec()
		}
	case !ended && (!known || wasEnded):
		m.running.Inc()
	}
}

// forget drops a removed task group.
func (m *agentMetrics) forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.phase[key]; ok && !v4.Terminal(p) {
		m.running.Dec()
	}
	delete(m.phase, key)
}
