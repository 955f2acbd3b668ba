package server

import (
	"net/http"
	"strings"

	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/ui"
)

// routes registers every route of docs/api.md. The catch-all "/" turns the mux's plain
// text 404 and 405 into the API's JSON errors.
func (s *Server) routes() *httpapi.Mux {
	mux := httpapi.NewMux(s.guard, s.errs)
	mux.Handle("GET /v1/namespaces/{ns}/{plural}", inNamespace(acl.VerbRead), s.handleList)
	mux.Handle("POST /v1/namespaces/{ns}/{plural}", inNamespace(acl.VerbWrite), s.handleCreate)
	mux.Handle("GET /v1/namespaces/{ns}/{plural}/{name}", inNamespace(acl.VerbRead), s.handleGet)
	mux.Handle("PUT /v1/namespaces/{ns}/{plural}/{name}", inNamespace(acl.VerbWrite), s.handleUpdate)
	mux.Handle("DELETE /v1/namespaces/{ns}/{plural}/{name}", inNamespace(acl.VerbWrite), s.handleDelete)
	mux.Handle("GET /v1/namespaces/{ns}/{plural}/{name}/definition", inNamespace(acl.VerbRead), s.handleDefinition)
	mux.Handle("POST /v1/namespaces/{ns}/{plural}/{name}/scale", inNamespace(acl.VerbScale), s.handleScale)
	mux.Handle("POST /v1/namespaces/{ns}/{plural}/{name}/replace", inNamespace(acl.VerbWrite), s.handleReplace)
	mux.Handle("POST /v1/namespaces/{ns}/{plural}/{name}/instances/{index}/{action}", inNamespace(acl.VerbWrite), s.handleInstance)
	mux.Handle("POST /v1/namespaces/{ns}/deployments/{name}/rollout/{action}", on(acl.VerbWrite, deplo), s.handleRollout)
	mux.Handle("GET /v1/namespaces/{ns}/deployments/{name}/history", on(acl.VerbRead, deplo), s.handleHistory)
	mux.Handle("GET /v1/{plural}", inNamespace(acl.VerbRead), s.handleList)
	mux.Handle("GET /v1/namespaces", httpapi.AnyUser, s.handleNamespaces) // filtered by the caller's rights
	mux.Handle("GET /v1/nodes", on(acl.VerbRead, node), s.handleNodeList)
	mux.Handle("POST /v1/nodes", on(acl.VerbWrite, node), s.handleNodeRegister)
	mux.Handle("GET /v1/nodes/{name}", on(acl.VerbRead, node), s.handleNodeGet)
	mux.Handle("GET /v1/nodes/{name}/metrics", on(acl.VerbRead, node), s.handleNodeMetrics)
	mux.Handle("GET /v1/nodes/{name}/usage", on(acl.VerbRead, node), s.handleNodeUsage)
	mux.Handle("PUT /v1/nodes/{name}", on(acl.VerbWrite, node), s.handleNodeReplace)
	mux.Handle("PATCH /v1/nodes/{name}", on(acl.VerbWrite, node), s.handleNodePatch)
	mux.Handle("DELETE /v1/nodes/{name}", on(acl.VerbWrite, node), s.handleNodeDelete)
	mux.Handle("POST /v1/namespaces/{ns}/taskgroups/{name}/move", on(acl.VerbWrite, task), s.handleMove)
	mux.Handle("POST /v1/nodes/{name}/drain", on(acl.VerbWrite, node), s.handleNodeDrain)
	mux.Handle("GET /v1/engine", on(acl.VerbRead, acl.KindEngine), s.handleEngineGet)
	mux.Handle("PUT /v1/engine", on(acl.VerbAdmin, acl.KindEngine), s.handleEnginePut)
	mux.Handle("POST /v1/apply", httpapi.AnyUser, s.handleApply)
	mux.Handle("POST /v1/plan", httpapi.AnyUser, s.handlePlan)
	mux.Handle("GET /v1/events", readEvents, s.handleEvents)
	s.agents.Routes(mux)
	s.agentProxyRoutes(mux)
	s.clusterRoutes(mux)
	s.encryptionRoutes(mux)
	s.joinTokenRoutes(mux)
	s.aclRoutes(mux)
	s.quotaRoutes(mux)
	s.priorityClassRoutes(mux)
	s.customResourceRoutes(mux)
	s.webhookRoutes(mux)
	s.certificateRoutes(mux)
	s.workflowRoutes(mux)
	s.workflowArchiveRoutes(mux)
	s.cronRoutes(mux)
	s.packageRoutes(mux)
	s.debugRoutes(mux)
	s.compatRoutes(mux)
	s.artifactRoutes(mux)
	mux.HandleHTTP("GET "+ui.Prefix, httpapi.Open, ui.Handler())
	mux.Handle("GET /ui", httpapi.Open, redirectToUI)
	mux.Handle("GET /{$}", httpapi.Open, redirectToUI)
	mux.Handle("GET /healthz", httpapi.Open, s.handleHealthz)
	mux.Handle("GET /readyz", httpapi.Open, s.handleReadyz)
	mux.HandleHTTP("GET /metrics", on(acl.VerbRead, acl.KindMetrics), s.metrics.handler())
	mux.HandleHTTP("GET /metrics/etcd", on(acl.VerbRead, acl.KindMetrics), etcdMetrics())
	mux.Handle("/", httpapi.Open, s.handleFallback)
	return mux
}

// probeMethods are the methods the API uses; the fallback asks the mux which of them a
// path accepts to tell 405 from 404.
var probeMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

func (s *Server) handleFallback(w http.ResponseWriter, r *http.Request) error {
	var allow []string
	for _, m := range probeMethods {
		probe := *r
		probe.Method = m
		if pattern := s.mux.Pattern(&probe); pattern != "" && pattern != "/" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		return httpapi.Errorf(http.StatusMethodNotAllowed, "method %s not allowed on %s", r.Method, r.URL.Path)
	}
	return httpapi.Errorf(http.StatusNotFound, "no route for %s %s", r.Method, r.URL.Path)
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
