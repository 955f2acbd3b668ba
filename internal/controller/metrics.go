package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/berthhq/berth/internal/prom"
	"github.com/berthhq/berth/internal/scheduler"
)

// Metrics are the controllers' and the scheduler's Prometheus metrics (docs/operations.md,
// "Metrics"). No label names an instance or an object: their number must not follow the
// cluster's size. A nil *Metrics records nothing.
type Metrics struct {
	placements        prometheus.Counter
	unplaced          *prometheus.CounterVec
	placeDuration     prometheus.Histogram
	reconciles        *prometheus.CounterVec
	reconcileDuration *prometheus.HistogramVec
	queueDepth        *prometheus.GaugeVec
	notifyUnsent      *prometheus.CounterVec
	statusWrites      *prometheus.CounterVec
	workflowPhases    *prometheus.CounterVec
	workflowsArchived *prometheus.CounterVec
}

// NewMetrics makes the metrics; register Collectors with a registry.
func NewMetrics() *Metrics {
	return &Metrics{
		placements: prom.Counter("berth_scheduler_placements_total", "Task groups the scheduler placed on a node."),
		unplaced: prom.CounterVec("berth_scheduler_unplaced_total",
			"Task groups the scheduler could place nowhere, by the kind of check that rejected the most nodes (node, taint, runtime, volume, constraint, resources, ports, gpu, groupby).", "check"),
		placeDuration: prom.Histogram("berth_scheduler_place_duration_seconds",
			"Time the scheduler took to place one request (every missing instance of one workload).",
			prometheus.ExponentialBuckets(0.0001, 4, 9)), // 100 µs to 6.5 s
		reconciles: prom.CounterVec("berth_controller_reconciles_total",
			"Reconciles by controller and result (ok, error).", "controller", "result"),
		reconcileDuration: prom.HistogramVec("berth_controller_reconcile_duration_seconds",
			"Time one reconcile took, by controller.",
			prometheus.ExponentialBuckets(0.0005, 4, 9), "controller"), // 500 µs to 33 s
		queueDepth: prom.GaugeVec("berth_controller_queue_depth",
			"Keys waiting in a controller's work queue (due now or later), by controller.", "controller"),
		statusWrites: prom.CounterVec("berth_controller_status_writes_total",
			"Workload statuses a controller wrote, by controller.", "controller"),
		workflowPhases: prom.CounterVec("berth_workflow_phase_changes_total",
			"Phase changes of workflows and of their nodes, by what changed (workflow, node) and the phase reached.", "object", "phase"),
		workflowsArchived: prom.CounterVec("berth_workflows_archived_total",
			"Finished workflows the leader moved into the workflow archive (archived), or left as objects because their record is too large (too-large).", "result"),
		notifyUnsent: prom.CounterVec("berth_notify_dropped_total",
			"Notify messages dropped unsent because the subscribing token may not receive them, by reason (no-subscriber, forbidden, unchecked).", "reason"),
	}
}

// Collectors are the metrics to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.placements, m.unplaced, m.placeDuration, m.reconciles, m.reconcileDuration, m.queueDepth, m.notifyUnsent, m.statusWrites, m.workflowPhases, m.workflowsArchived}
}

// notifyDropped counts a notify message dropped unsent (notify_access.go).
func (m *Metrics) notifyDropped(reason string) {
	if m == nil {
		return
	}
	m.notifyUnsent.WithLabelValues(reason).Inc()
}

// statusWritten counts a workload's status written: each is a raft entry and a turn on
// its namespace's ledger (docs/store.md, "Namespace limits").
func (m *Metrics) statusWritten(controller string) {
	if m == nil {
		return
	}
	m.statusWrites.WithLabelValues(controller).Inc()
}

// workflowPhase counts a workflow's or a node's phase change.
func (m *Metrics) workflowPhase(object, phase string) {
	if m == nil {
		return
	}
	m.workflowPhases.WithLabelValues(object, phase).Inc()
}

// workflowArchived counts a workflow archived, or refused by the archive.
func (m *Metrics) workflowArchived(result string) {
	if m == nil {
		return
	}
	m.workflowsArchived.WithLabelValues(result).Inc()
}

// observePlace records one request's placement.
func (m *Metrics) observePlace(res scheduler.Result, took time.Duration) {
	if m == nil {
		return
	}
	m.placeDuration.Observe(took.Seconds())
	m.placements.Add(float64(len(res.Placements)))
	if n := len(res.Unplaced); n > 0 {
		kind := res.Reason.Main()
		if kind == "" {
			kind = scheduler.CheckNode // no node at all
		}
		m.unplaced.WithLabelValues(kind).Add(float64(n))
	}
}

// place runs one placement on the snapshot and records it.
func (m *Metrics) place(s *scheduler.Snapshot, req *scheduler.Request, opts scheduler.Options) scheduler.Result {
	start := time.Now()
	res := s.Place(req, opts)
	m.observePlace(res, time.Since(start))
	return res
}

// observeReconcile records one reconcile of a controller and its queue's depth after it.
func (m *Metrics) observeReconcile(controller string, took time.Duration, err error, depth int) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.reconciles.WithLabelValues(controller, result).Inc()
	m.reconcileDuration.WithLabelValues(controller).Observe(took.Seconds())
	m.queueDepth.WithLabelValues(controller).Set(float64(depth))
}
