package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/prom"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/webhook"
)

// Admission webhook configurations (docs/policy.md, "Admission webhooks"): cluster-wide
// documents that anyone with read on admissionwebhook (a cluster kind, granted by name
// only) reads and only an administrator (admin on cluster) writes. They are written
// through these routes, never through the admission chain, so no hook ever judges a
// hook's configuration: a broken hook with failurePolicy Fail cannot lock the
// administrator out of removing it.

func (s *Server) webhookRoutes(mux *httpapi.Mux) {
	read := on(acl.VerbRead, v4.KindAdmissionWebhook)
	mux.Handle("GET /v1/admissionwebhooks", read, s.handleWebhookList)
	mux.Handle("GET /v1/admissionwebhooks/{name}", read, s.handleWebhookGet)
	mux.Handle("POST /v1/admissionwebhooks", adminCluster, s.handleWebhookCreate)
	mux.Handle("PUT /v1/admissionwebhooks/{name}", adminCluster, s.handleWebhookPut)
	mux.Handle("DELETE /v1/admissionwebhooks/{name}", adminCluster, s.handleWebhookDelete)
}

// webhookState is the server's side of the hooks: where its own API is, the client
// that calls hooks, the configurations compiled (read again at most every
// webhookCacheTTL, and at once after this server wrote one), and the metrics.
type webhookState struct {
	own    *ownAPI
	client *webhook.Client
	calls  *prometheus.CounterVec
	took   *prometheus.HistogramVec
	step   prometheus.Histogram
	// onStep, when set, hears each step's time too (the benchmark's percentiles).
	onStep func(time.Duration)

	mu                   sync.Mutex
	loaded               time.Time
	mutating, validating []*webhook.Hook
	// gen counts this server's writes of configurations (forgetHooks) and loadedGen is
	// the count the hooks were read at: they are used only when the two agree. loading
	// says a read is under way, during which the others use the hooks read before.
	gen, loadedGen uint64
	loading        bool
}

// timeStep records the time of one write's webhook step, begun at start.
func (ws *webhookState) timeStep(start time.Time) {
	d := time.Since(start)
	ws.step.Observe(d.Seconds())
	if ws.onStep != nil {
		ws.onStep(d)
	}
}

// webhookCacheTTL is how long a server uses the configurations it read: another
// server's change applies here within it.
const webhookCacheTTL = time.Second

func (s *Server) newWebhookState(cfg Config) *webhookState {
	ws := &webhookState{own: newOwnAPI(cfg),
		calls: prom.CounterVec("berth_admission_webhook_calls_total",
			"Admission webhook calls by hook and outcome (allowed, patched, denied, failed).", "hook", "outcome"),
		took: prom.HistogramVec("berth_admission_webhook_duration_seconds", "Time of admission webhook calls, by hook.",
			[]float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}, "hook"),
		step: prom.Histogram("berth_admission_webhook_step_seconds",
			"Time the admission webhooks added to one write while any were configured: matching, the stored object's read, the calls, a mutation's checks.",
			[]float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30})}
	ws.client = webhook.NewClient(webhook.Options{ClusterCA: cfg.CA.Pool(), Forbidden: ws.own.isOwnAddr, Observe: s.observeWebhook})
	s.metrics.registry.MustRegister(ws.calls, ws.took, ws.step)
	return ws
}

// observeWebhook counts every call, and records an event on the written object for each
// failure and denial, so that its owner sees why a write was refused or went through
// without its hook.
func (s *Server) observeWebhook(h *webhook.Hook, req *webhook.Request, o webhook.Outcome, d time.Duration, err error) {
	s.webhooks.calls.WithLabelValues(h.ID(), string(o)).Inc()
	s.webhooks.took.WithLabelValues(h.ID()).Observe(d.Seconds())
	ev := v4.Event{Type: v4.EventWarning, Kind: v4.Kind(req.Kind), Namespace: req.Namespace, Name: req.Name}
	switch o {
	case webhook.Denied:
		ev.Reason, ev.Message = "AdmissionWebhookDenied", fmt.Sprintf("admission webhook %s denied the %s", h.ID(), req.Operation)
	case webhook.Failed:
		policy := "Fail: the write is refused"
		if h.Ignore {
			policy = "Ignore: the write goes on without it"
		}
		ev.Reason, ev.Message = "AdmissionWebhookFailed", fmt.Sprintf("admission webhook %s failed (%v); failurePolicy %s", h.ID(), err, policy)
	default:
		return
	}
	s.store.QueueEvent(ev)
}

// admissionHooks are the compiled hooks, mutating and validating.
func (s *Server) admissionHooks(ctx context.Context) (mutating, validating []*webhook.Hook, err error) {
	ws := s.webhooks
	ws.mu.Lock()
	// One write reads the configurations again when they are a second old; the others
	// go on with the ones read before meanwhile, instead of all waiting for its read of
	// etcd. After this server wrote one, every write waits for the new ones.
	if current := ws.loadedGen == ws.gen && !ws.loaded.IsZero(); current && (ws.loading || time.Since(ws.loaded) < webhookCacheTTL) {
		defer ws.mu.Unlock()
		return ws.mutating, ws.validating, nil
	}
	gen := ws.gen
	ws.loading = true
	ws.mu.Unlock()
	mutating, validating, err = s.readHooks(ctx)
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.loading = false
	if err != nil {
		return nil, nil, err
	}
	if gen >= ws.loadedGen { // else a read begun after this one's start is there already
		ws.mutating, ws.validating, ws.loaded, ws.loadedGen = mutating, validating, time.Now(), gen
		ws.client.Forget(append(slices.Clone(mutating), validating...))
	}
	return mutating, validating, nil
}

// readHooks reads and compiles the configurations.
func (s *Server) readHooks(ctx context.Context) (mutating, validating []*webhook.Hook, err error) {
	docs, err := s.store.AdmissionWebhooks(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("read the admission webhooks: %w", err)
	}
	configs := make([]*v4.AdmissionWebhook, 0, len(docs))
	for _, d := range docs {
		var c v4.AdmissionWebhook
		if err := json.Unmarshal(d.Value, &c); err != nil {
			s.log.Warn("an admission webhook configuration does not decode: it is skipped", "name", d.Name, "err", err)
			continue
		}
		configs = append(configs, &c)
	}
	mutating, validating = webhook.Compile(configs)
	return mutating, validating, nil
}

// forgetHooks makes the next admission read the configurations again, and every
// admission wait for that read.
func (s *Server) forgetHooks() {
	s.webhooks.mu.Lock()
	s.webhooks.gen++
	s.webhooks.mu.Unlock()
}

func (s *Server) handleWebhookList(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	docs, err := s.store.AdmissionWebhooks(ctx)
	if err != nil {
		return err
	}
	out := v4.AdmissionWebhookList{Items: make([]v4.AdmissionWebhook, 0, len(docs))}
	for _, d := range docs {
		c, err := storedWebhook(d)
		if err != nil {
			return err
		}
		out.Items = append(out.Items, *c)
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

func storedWebhook(d store.StoredDoc) (*v4.AdmissionWebhook, error) {
	var c v4.AdmissionWebhook
	if err := json.Unmarshal(d.Value, &c); err != nil {
		return nil, fmt.Errorf("admission webhook configuration %s: %w", d.Name, err)
	}
	c.Metadata.ResourceVersion = strconv.FormatInt(d.Rev, 10)
	return &c, nil
}

func (s *Server) handleWebhookGet(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	d, err := s.store.AdmissionWebhook(ctx, r.PathValue("name"))
	if err != nil {
		return err
	}
	c, err := storedWebhook(d)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, c)
	return nil
}

func (s *Server) handleWebhookCreate(w http.ResponseWriter, r *http.Request) error {
	return s.writeWebhook(w, r, "")
}

func (s *Server) handleWebhookPut(w http.ResponseWriter, r *http.Request) error {
	return s.writeWebhook(w, r, r.PathValue("name"))
}

// writeWebhook creates (name "": POST) or creates-or-replaces (PUT) a configuration.
func (s *Server) writeWebhook(w http.ResponseWriter, r *http.Request, name string) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	c, err := s.decodeWebhook(body, name)
	if err != nil {
		return err
	}
	rev := int64(-1) // POST creates
	if name != "" {
		if rev, err = webhookVersion(r, c); err != nil {
			return err
		}
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	if err := s.checkWebhookRef(ctx, c); err != nil {
		return err
	}
	if c.Metadata.CreationTimestamp == nil {
		t := time.Now().UTC().Truncate(time.Second)
		c.Metadata.CreationTimestamp = &t
	}
	c.Metadata.ResourceVersion = ""
	val, err := json.Marshal(c)
	if err != nil {
		return err
	}
	newRev, created, err := s.store.PutAdmissionWebhook(ctx, c.Metadata.Name, val, rev)
	if err != nil {
		return err
	}
	s.forgetHooks()
	c.Metadata.ResourceVersion = strconv.FormatInt(newRev, 10)
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	httpapi.WriteJSON(w, code, c)
	return nil
}

// webhookVersion is a PUT's precondition: ?resourceVersion= or metadata.resourceVersion
// (0: none, the write creates or replaces).
func webhookVersion(r *http.Request, c *v4.AdmissionWebhook) (int64, error) {
	rv := r.URL.Query().Get("resourceVersion")
	if rv == "" {
		rv = c.Metadata.ResourceVersion
	}
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n <= 0 {
		return 0, httpapi.Errorf(http.StatusBadRequest, "resourceVersion %q is not a positive integer", rv).WithDetail("metadata.resourceVersion", "must be a positive integer")
	}
	return n, nil
}

// decodeWebhook reads and validates a configuration, its URLs against this server's
// own API too.
func (s *Server) decodeWebhook(body []byte, name string) (*v4.AdmissionWebhook, error) {
	subject := "admission webhook configuration"
	if name != "" {
		subject += " " + name
	}
	c, err := v4.DecodeAdmissionWebhook(body)
	var fe v4.FieldErrors
	if errors.As(err, &fe) {
		ae := httpapi.Errorf(http.StatusUnprocessableEntity, "%s", httpapi.InvalidMessage(subject, fe))
		ae.Details = fe
		return nil, ae
	}
	if err != nil {
		return nil, httpapi.Errorf(http.StatusBadRequest, "%s: %v", subject, err)
	}
	for i, h := range c.Hooks() {
		u, err := url.Parse(h.ClientConfig.URL)
		if err == nil && s.webhooks.own.isOwnURL(u) {
			field := fmt.Sprintf("%s[%d].clientConfig.url", c.HooksField(), i)
			msg := "points at berth's own API: a webhook must be another server"
			return nil, httpapi.Errorf(http.StatusUnprocessableEntity, "invalid %s: %s: %s", subject, field, msg).WithDetail(field, msg)
		}
	}
	if name != "" && c.Metadata.Name != name {
		return nil, httpapi.Errorf(http.StatusBadRequest, "the document is named %q, the path %q", c.Metadata.Name, name).
			WithDetail("metadata.name", "must be "+name)
	}
	return c, nil
}

// checkWebhookRef keeps BCS's rule: one configuration per (operation, kind) of
// resourcesRef.
func (s *Server) checkWebhookRef(ctx context.Context, c *v4.AdmissionWebhook) error {
	if c.ResourcesRef == nil {
		return nil
	}
	docs, err := s.store.AdmissionWebhooks(ctx)
	if err != nil {
		return err
	}
	op, kind := v4.WebhookOperation(c.ResourcesRef.Operation), webhookKind(c.ResourcesRef.Kind)
	for _, d := range docs {
		other, err := storedWebhook(d)
		if err != nil || other.Metadata.Name == c.Metadata.Name || other.ResourcesRef == nil {
			continue
		}
		if v4.WebhookOperation(other.ResourcesRef.Operation) == op && webhookKind(other.ResourcesRef.Kind) == kind {
			msg := fmt.Sprintf("configuration %s already has operation %s of kind %s: one configuration per operation and kind", other.Metadata.Name, op, kind)
			return httpapi.Errorf(http.StatusConflict, "resourcesRef: %s", msg).WithDetail("resourcesRef", msg)
		}
	}
	return nil
}

func webhookKind(k string) v4.Kind {
	kind, _ := v4.ParseKind(k)
	return kind
}

func (s *Server) handleWebhookDelete(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	d, err := s.store.DeleteAdmissionWebhook(ctx, r.PathValue("name"))
	if err != nil {
		return err
	}
	s.forgetHooks()
	c, err := storedWebhook(d)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, c)
	return nil
}
