package server

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/prom"
	"github.com/berthhq/berth/internal/store"
)

// metrics holds the server's own Prometheus registry (not the global one, so several
// servers can live in one process, as tests and `berth dev` need).
type metrics struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// connsOpened and connsOpen count the API's connections (ConnState): each new one
	// costs a TLS handshake, which at thousands of agents is most of a busy server's CPU.
	connsOpened prometheus.Counter
	connsOpen   prometheus.Gauge
	// watchStreams, watchEvents and watchCutOffs follow the API's watch streams: open
	// ones and what they sent by kind, and how many were cut off for falling behind
	// (their client then lists again), the sign of a watcher that cannot keep up.
	watchStreams *prometheus.GaugeVec
	watchEvents  *prometheus.CounterVec
	watchCutOffs *prometheus.CounterVec
}

func newMetrics(st *store.Store, watches *store.WatchBudget) *metrics {
	m := &metrics{
		requests: prom.CounterVec("berth_http_requests_total",
			"HTTP requests served, by method, route pattern and status code.", "method", "route", "code"),
		duration: prom.HistogramVec("berth_http_request_duration_seconds",
			"Time to serve HTTP requests (watch streams: their whole life), by method and route.",
			prometheus.DefBuckets, "method", "route"),
		connsOpened: prom.Counter("berth_http_connections_opened_total",
			"Connections the API accepted (each a TLS handshake on the TLS listener)."),
		connsOpen:    prom.Gauge("berth_http_connections_open", "Connections to the API open now."),
		watchStreams: prom.GaugeVec("berth_watch_streams", "Watch streams of the API open now, by kind.", "kind"),
		watchEvents:  prom.CounterVec("berth_watch_events_sent_total", "Changes the API's watch streams sent, by kind.", "kind"),
		watchCutOffs: prom.CounterVec("berth_watch_cut_offs_total",
			"Watch streams ended because their client fell too far behind (it lists again), by kind.", "kind"),
	}
	queued := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "berth_watch_queued_bytes",
		Help: "Bytes of changes waiting in the watch streams of this server for their clients (docs/operations.md, Watch streams and slow clients).",
	}, func() float64 { return float64(watches.Used()) })
	localReads := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "berth_store_local_reads_total",
		Help: "Reads a sole embedded etcd member served from its applied state, without raft (docs/store.md, Reads).",
	}, func() float64 { n, _ := st.LocalReads(); return float64(n) })
	localAgain := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "berth_store_local_reads_asked_again_total",
		Help: "Local reads asked again through raft because a watch had been told of a newer revision (docs/store.md, Reads).",
	}, func() float64 { _, n := st.LocalReads(); return float64(n) })
	m.registry = prom.NewProcessRegistry(m.requests, m.duration, m.connsOpened, m.connsOpen, queued, localReads, localAgain, &objectCollector{store: st},
		m.watchStreams, m.watchEvents, m.watchCutOffs, &storeWatchCollector{store: st})
	return m
}

// connState counts a connection's changes of state (http.Server.ConnState).
func (m *metrics) connState(_ net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		m.connsOpened.Inc()
		m.connsOpen.Inc()
	case http.StateClosed, http.StateHijacked:
		m.connsOpen.Dec()
	}
}

func (m *metrics) handler() http.Handler { return prom.Handler(m.registry) }

// objectCollector counts stored objects per kind at scrape time (a count-only etcd read
// per kind), so the gauge is never stale and costs nothing between scrapes.
type objectCollector struct {
	store *store.Store
}

var objectsDesc = prometheus.NewDesc("berth_objects", "Objects stored, by kind.", []string{"kind"}, nil)

func (c *objectCollector) Describe(ch chan<- *prometheus.Desc) { ch <- objectsDesc }

func (c *objectCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, kind := range append(v4.Kinds(), v4.KindNode, v4.KindTaskGroup) {
		n, err := c.store.Count(ctx, kind)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(objectsDesc, err)
			return
		}
		ch <- prometheus.MustNewConstMetric(objectsDesc, prometheus.GaugeValue, float64(n), string(kind))
	}
}

// storeWatchCollector reports the store's open watches per kind at scrape time: one per
// kind the process caches (docs/store.md, "Shared cache"), plus one per API watch stream
// of a kind other than task groups.
type storeWatchCollector struct {
	store *store.Store
}

var storeWatchesDesc = prometheus.NewDesc("berth_store_watches", "Open etcd watches of the store, by kind.", []string{"kind"}, nil)

func (c *storeWatchCollector) Describe(ch chan<- *prometheus.Desc) { ch <- storeWatchesDesc }

func (c *storeWatchCollector) Collect(ch chan<- prometheus.Metric) {
	for kind, n := range c.store.Watches() {
		ch <- prometheus.MustNewConstMetric(storeWatchesDesc, prometheus.GaugeValue, float64(n), string(kind))
	}
}

// instrument wraps the mux with metrics and debug access logs. The route label is the
// mux pattern (without its method), so paths with names do not explode cardinality.
func (s *Server) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		if traced(r) {
			traceRequest(sw, r, next)
		} else {
			next.ServeHTTP(sw, r)
		}
		route := r.Pattern // set by the mux on this request
		if _, path, ok := strings.Cut(route, " "); ok {
			route = path
		}
		if route == "" || route == "/" {
			route = "other"
		}
		elapsed := time.Since(start)
		s.metrics.requests.WithLabelValues(r.Method, route, strconv.Itoa(sw.code)).Inc()
		s.metrics.duration.WithLabelValues(r.Method, route).Observe(elapsed.Seconds())
		s.log.LogAttrs(r.Context(), slog.LevelDebug, "http request",
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("code", sw.code), slog.Duration("duration", elapsed),
			slog.String("remote", r.RemoteAddr))
	})
}

// statusWriter remembers the status code; Unwrap lets http.ResponseController reach the
// underlying writer's Flush for watch streams.
type statusWriter struct {
	http.ResponseWriter
	code        int
	wroteHeader bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.code, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wroteHeader = true
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// etcdMetrics serves the embedded etcd member's own metrics (etcd registers them with
// the process's default registry): GET /metrics/etcd. They keep etcd's names, which
// predate Prometheus's naming rules, so they are apart from berth's /metrics, whose names
// pass the lint. A server on an external etcd serves none (scrape the etcd members).
func etcdMetrics() http.Handler {
	gather := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := prometheus.DefaultGatherer.Gather()
		out := mfs[:0]
		for _, mf := range mfs {
			if strings.HasPrefix(mf.GetName(), "etcd_") {
				out = append(out, mf)
			}
		}
		return out, err
	})
	return promhttp.HandlerFor(gather, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
