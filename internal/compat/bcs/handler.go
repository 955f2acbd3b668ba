// Package bcs serves BCS's Mesos scheduler API (the bcs-mesos-driver's v4 routes) as a
// second front door of berth's /v1 API: each BCS request is translated into one or more
// /v1 requests, served by the same handler as every /v1 call (so the same admission,
// authorization, audit and controllers apply), and the answer is wrapped in BCS's
// {result, code, message, data} envelope with BCS's shapes (docs/compat.md).
package bcs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/berthhq/berth/internal/compat/v1call"
)

// Prefixes under which the API is served: the mesos driver's own, and the one clients use
// through the BCS API gateway.
const (
	DriverPrefix  = "/mesosdriver/v4"
	GatewayPrefix = "/bcsapi/v4/scheduler/mesos"
)

// ClusterHeader names the cluster a BCS client addresses.
const ClusterHeader = "BCS-ClusterID"

// Handler serves the BCS routes over an inner /v1 handler.
type Handler struct {
	v1        v1call.Caller
	clusterID string
	maxBody   int64 // the server's limit of a request body
	mux       *http.ServeMux
	execs     execSessions // bcs-client exec's sessions, for resize_exec
}

// bigLists is how many lists longer than a page this API reads at once: each holds its
// items in memory while its answer is made.
const bigLists = 2

// New returns the BCS front door over inner, the server's /v1 handler. clusterID, when
// set, is the only BCS-ClusterID accepted; empty accepts any (a single-cluster berth).
// maxBody is the server's limit of a request body, which BCS's bodies share.
func New(inner http.Handler, clusterID string, maxBody int64) *Handler {
	h := &Handler{v1: v1call.Caller{Inner: inner, Big: v1call.NewGate(bigLists)}, clusterID: clusterID, maxBody: maxBody, mux: http.NewServeMux()}
	h.workloadRoutes()
	h.deploymentRoutes()
	h.configRoutes()
	h.nodeRoutes()
	h.transactionRoutes()
	h.execRoutes()
	h.customResourceRoutes()
	h.admissionWebhookRoutes() // admissionwebhooks.go
	h.unservedRoutes()
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeFailure(w, failure{status: http.StatusNotFound, code: CodeNotFound,
			message: fmt.Sprintf("no BCS route for %s %s (docs/compat.md lists them)", r.Method, r.URL.Path)})
	})
	return h
}

// ServeHTTP strips either prefix, checks the cluster header and serves the route.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	escaped := r.URL.EscapedPath() // a %2F in a name stays inside its segment
	rest, ok := strings.CutPrefix(escaped, DriverPrefix)
	if !ok {
		rest, ok = strings.CutPrefix(escaped, GatewayPrefix)
	}
	if !ok || !strings.HasPrefix(rest, "/") {
		writeFailure(w, failure{status: http.StatusNotFound, code: CodeNotFound, message: "no BCS route for " + r.URL.Path})
		return
	}
	id := r.Header.Get(ClusterHeader)
	switch {
	case id == "":
		writeFailure(w, failure{status: http.StatusBadRequest, code: CodeHeaderCheck,
			message: "the " + ClusterHeader + " header is required (the cluster's ID, e.g. BCS-MESOS-10001)"})
		return
	case h.clusterID != "" && id != h.clusterID:
		writeFailure(w, failure{status: http.StatusBadRequest, code: CodeHeaderCheck,
			message: fmt.Sprintf("%s %q is not this cluster (%s)", ClusterHeader, id, h.clusterID)})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
			writeFailure(w, failure{code: CodeBadRequestData,
				message: fmt.Sprintf("the body is over the limit of %d bytes", h.maxBody)})
			return
		}
		writeFailure(w, failure{code: CodeBadRequestData, message: "read the body: " + err.Error()})
		return
	}
	routed := r.Clone(r.Context())
	u, err := url.Parse(rest)
	if err == nil {
		trimSlash(u)
	}
	if err == nil && path.Clean(u.Path) != u.Path {
		err = fmt.Errorf("%q is not a clean path", u.Path)
	}
	if err != nil {
		writeFailure(w, failure{status: http.StatusNotFound, code: CodeNotFound, message: "bad path: " + err.Error()})
		return
	}
	routed.URL.Path, routed.URL.RawPath = u.Path, u.RawPath
	routed.Body = io.NopCloser(bytes.NewReader(body))
	h.mux.ServeHTTP(w, v1call.WithBody(routed, body))
}

// trimSlash drops one trailing slash: BCS's router served every route with and without
// it, and bcs-client sends some with it (`bcs-client as -l` asks .../agentsettings/?ips=).
// Only BCS's prefixes come here; berth's /v1 routes keep their one clean form.
func trimSlash(u *url.URL) {
	if len(u.Path) > 1 && strings.HasSuffix(u.Path, "/") {
		u.Path = u.Path[:len(u.Path)-1]
		if u.RawPath != "" {
			u.RawPath = strings.TrimSuffix(u.RawPath, "/")
		}
	}
}
