package server

import (
	"net/http"
	"strings"

	"github.com/berthhq/berth/internal/ui"
)

// routes registers every route of docs/api.md. The catch-all "/" turns the mux's plain
// text 404 and 405 into the API's JSON errors.
func (s *Server) routes() *routeMux {
	mux := &routeMux{ServeMux: http.NewServeMux(), guard: s.guard}
	mux.HandleFunc("GET /v1/namespaces/{ns}/{plural}", s.handleList)
	mux.HandleFunc("POST /v1/namespaces/{ns}/{plural}", s.handleCreate)
	mux.HandleFunc("GET /v1/namespaces/{ns}/{plural}/{name}", s.handleGet)
	mux.HandleFunc("PUT /v1/namespaces/{ns}/{plural}/{name}", s.handleUpdate)
	mux.HandleFunc("DELETE /v1/namespaces/{ns}/{plural}/{name}", s.handleDelete)
	mux.HandleFunc("GET /v1/namespaces/{ns}/{plural}/{name}/definition", s.handleDefinition)
	mux.HandleFunc("POST /v1/namespaces/{ns}/{plural}/{name}/scale", s.handleScale)
	mux.HandleFunc("POST /v1/namespaces/{ns}/deployments/{name}/rollout/{action}", s.handleRollout)
	mux.HandleFunc("GET /v1/namespaces/{ns}/deployments/{name}/history", s.handleHistory)
	mux.HandleFunc("GET /v1/{plural}", s.handleList)
	mux.HandleFunc("GET /v1/nodes", s.handleNodeList)
	mux.HandleFunc("POST /v1/nodes", s.handleNodeRegister)
	mux.HandleFunc("GET /v1/nodes/{name}", s.handleNodeGet)
	mux.HandleFunc("GET /v1/nodes/{name}/metrics", s.handleNodeMetrics)
	mux.HandleFunc("PUT /v1/nodes/{name}", s.handleNodeReplace)
	mux.HandleFunc("PATCH /v1/nodes/{name}", s.handleNodePatch)
	mux.HandleFunc("DELETE /v1/nodes/{name}", s.handleNodeDelete)
	mux.HandleFunc("POST /v1/namespaces/{ns}/taskgroups/{name}/move", s.handleMove)
	mux.HandleFunc("POST /v1/nodes/{name}/drain", s.handleNodeDrain)
	mux.HandleFunc("GET /v1/engine", s.handleEngineGet)
	mux.HandleFunc("PUT /v1/engine", s.handleEnginePut)
	mux.HandleFunc("POST /v1/apply", s.handleApply)
	mux.HandleFunc("POST /v1/plan", s.handlePlan)
	mux.HandleFunc("GET /v1/events", s.handleEvents)
	s.agentRoutes(mux)
	s.clusterRoutes(mux)
	s.encryptionRoutes(mux)
	s.joinTokenRoutes(mux)
	s.aclRoutes(mux)
	s.quotaRoutes(mux)
	s.packageRoutes(mux)
	s.debugRoutes(mux)
	s.compatRoutes(mux)
	mux.Handle("GET "+ui.Prefix, ui.Handler())
	mux.HandleFunc("GET /ui", redirectToUI)
	mux.HandleFunc("GET /{$}", redirectToUI)
	mux.HandleFunc("GET /healthz", s.handleHealthz)
	mux.HandleFunc("GET /readyz", s.handleReadyz)
	mux.Handle("GET /metrics", s.metrics.handler())
	mux.Handle("GET /metrics/etcd", etcdMetrics())
	mux.HandleFunc("/", s.handleFallback)
	return mux
}

// routeMux is the server's ServeMux that remembers the patterns registered on it, so
// tests can walk every route (admit_test.go checks that every write route validates).
type routeMux struct {
	*http.ServeMux
	patterns []string
	// guard wraps each route with its authorization (authz_routes.go).
	guard func(pattern string, h http.HandlerFunc) http.HandlerFunc
}

func (m *routeMux) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.HandleFunc(pattern, m.guard(pattern, h))
}

func (m *routeMux) Handle(pattern string, h http.Handler) {
	m.HandleFunc(pattern, h.ServeHTTP)
}

// probeMethods are the methods the API uses; the fallback asks the mux which of them a
// path accepts to tell 405 from 404.
var probeMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

func (s *Server) handleFallback(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range probeMethods {
		probe := *r
		probe.Method = m
		if _, pattern := s.mux.Handler(&probe); pattern != "" && pattern != "/" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		s.writeError(w, r, errorf(http.StatusMethodNotAllowed, "method %s not allowed on %s", r.Method, r.URL.Path))
		return
	}
	s.writeError(w, r, errorf(http.StatusNotFound, "no route for %s %s", r.Method, r.URL.Path))
}

// handleHealthz answers while the process serves; it does not look at etcd (see /readyz).
func (s *Server) handleHealthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok\n"))
}

// redirectToUI sends a browser at the server's root to the web console.
func redirectToUI(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, ui.Prefix, http.StatusFound)
}
