package server

import (
	"net/http"
	"strings"

	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/ui"
)

// routes registers every route of docs/api.md. The catch-all "/" turns the mux's plain
// text 404 and 405 into the API's JSON errors.
func (s *Server) routes() *routeMux {
	mux := &routeMux{mux: http.NewServeMux(), srv: s, access: map[string]access{}}
	mux.handle("GET /v1/namespaces/{ns}/{plural}", inNamespace(acl.VerbRead), s.handleList)
	mux.handle("POST /v1/namespaces/{ns}/{plural}", inNamespace(acl.VerbWrite), s.handleCreate)
	mux.handle("GET /v1/namespaces/{ns}/{plural}/{name}", inNamespace(acl.VerbRead), s.handleGet)
	mux.handle("PUT /v1/namespaces/{ns}/{plural}/{name}", inNamespace(acl.VerbWrite), s.handleUpdate)
	mux.handle("DELETE /v1/namespaces/{ns}/{plural}/{name}", inNamespace(acl.VerbWrite), s.handleDelete)
	mux.handle("GET /v1/namespaces/{ns}/{plural}/{name}/definition", inNamespace(acl.VerbRead), s.handleDefinition)
	mux.handle("POST /v1/namespaces/{ns}/{plural}/{name}/scale", inNamespace(acl.VerbScale), s.handleScale)
	mux.handle("POST /v1/namespaces/{ns}/deployments/{name}/rollout/{action}", on(acl.VerbWrite, deplo), s.handleRollout)
	mux.handle("GET /v1/namespaces/{ns}/deployments/{name}/history", on(acl.VerbRead, deplo), s.handleHistory)
	mux.handle("GET /v1/{plural}", inNamespace(acl.VerbRead), s.handleList)
	mux.handle("GET /v1/nodes", on(acl.VerbRead, node), s.handleNodeList)
	mux.handle("POST /v1/nodes", on(acl.VerbWrite, node), s.handleNodeRegister)
	mux.handle("GET /v1/nodes/{name}", on(acl.VerbRead, node), s.handleNodeGet)
	mux.handle("GET /v1/nodes/{name}/metrics", on(acl.VerbRead, node), s.handleNodeMetrics)
	mux.handle("PUT /v1/nodes/{name}", on(acl.VerbWrite, node), s.handleNodeReplace)
	mux.handle("PATCH /v1/nodes/{name}", on(acl.VerbWrite, node), s.handleNodePatch)
	mux.handle("DELETE /v1/nodes/{name}", on(acl.VerbWrite, node), s.handleNodeDelete)
	mux.handle("POST /v1/namespaces/{ns}/taskgroups/{name}/move", on(acl.VerbWrite, task), s.handleMove)
	mux.handle("POST /v1/nodes/{name}/drain", on(acl.VerbWrite, node), s.handleNodeDrain)
	mux.handle("GET /v1/engine", on(acl.VerbRead, acl.KindEngine), s.handleEngineGet)
	mux.handle("PUT /v1/engine", on(acl.VerbAdmin, acl.KindEngine), s.handleEnginePut)
	mux.handle("POST /v1/apply", anyUser, s.handleApply)
	mux.handle("POST /v1/plan", anyUser, s.handlePlan)
	mux.handle("GET /v1/events", readEvents, s.handleEvents)
	s.agentRoutes(mux)
	s.clusterRoutes(mux)
	s.encryptionRoutes(mux)
	s.joinTokenRoutes(mux)
	s.aclRoutes(mux)
	s.quotaRoutes(mux)
	s.packageRoutes(mux)
	s.debugRoutes(mux)
	s.compatRoutes(mux)
	mux.handleHTTP("GET "+ui.Prefix, open, ui.Handler())
	mux.handle("GET /ui", open, redirectToUI)
	mux.handle("GET /{$}", open, redirectToUI)
	mux.handle("GET /healthz", open, s.handleHealthz)
	mux.handle("GET /readyz", open, s.handleReadyz)
	mux.handleHTTP("GET /metrics", on(acl.VerbRead, acl.KindMetrics), s.metrics.handler())
	mux.handleHTTP("GET /metrics/etcd", on(acl.VerbRead, acl.KindMetrics), etcdMetrics())
	mux.handle("/", open, s.handleFallback)
	return mux
}

// routeMux is the server's ServeMux that remembers the routes registered on it and what
// each needs, so tests can walk every route (admit_test.go checks that every write route
// validates, authz_test.go that every route has its access).
type routeMux struct {
	// mux is not embedded: a route is added only through handle, with its access.
	mux      *http.ServeMux
	patterns []string
	access   map[string]access
	srv      *Server
}

// handle registers h for pattern behind what a says the route needs: the guard of its
// access (authz_routes.go), then h, whose error serve answers.
func (m *routeMux) handle(pattern string, a access, h handlerFunc) {
	m.patterns = append(m.patterns, pattern)
	m.access[pattern] = a
	m.mux.HandleFunc(pattern, m.srv.serve(m.srv.guard(pattern, a, h)))
}

// handleHTTP is handle for a plain http.Handler (files, metrics, the other front doors).
func (m *routeMux) handleHTTP(pattern string, a access, h http.Handler) {
	m.handle(pattern, a, func(w http.ResponseWriter, r *http.Request) error {
		h.ServeHTTP(w, r)
		return nil
	})
}

func (m *routeMux) ServeHTTP(w http.ResponseWriter, r *http.Request) { m.mux.ServeHTTP(w, r) }

// probeMethods are the methods the API uses; the fallback asks the mux which of them a
// path accepts to tell 405 from 404.
var probeMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

func (s *Server) handleFallback(w http.ResponseWriter, r *http.Request) error {
	var allow []string
	for _, m := range probeMethods {
		probe := *r
		probe.Method = m
		if _, pattern := s.mux.mux.Handler(&probe); pattern != "" && pattern != "/" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		return errorf(http.StatusMethodNotAllowed, "method %s not allowed on %s", r.Method, r.URL.Path)
	}
	return errorf(http.StatusNotFound, "no route for %s %s", r.Method, r.URL.Path)
}

// handleHealthz answers while the process serves; it does not look at etcd (see /readyz).
func (s *Server) handleHealthz(w http.ResponseWriter, _ *http.Request) error {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok\n"))
	return nil
}

// redirectToUI sends a browser at the server's root to the web console.
func redirectToUI(w http.ResponseWriter, r *http.Request) error {
	http.Redirect(w, r, ui.Prefix, http.StatusFound)
	return nil
}
