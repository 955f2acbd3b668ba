package server

import (
	"github.com/berthhq/berth/internal/httpapi"

	"net/http"
	"net/http/pprof"
)

// debugRoutes serves Go's runtime profiles (net/http/pprof) under /v1/debug/pprof/, to
// administrators only (docs/operations.md, Profiling): a profile shows the server's
// code paths and memory, and a CPU or trace profile costs CPU while it runs.
func (s *Server) debugRoutes(mux *httpapi.Mux) {
	mux.Handle("GET /v1/debug/pprof/{profile...}", adminCluster, func(w http.ResponseWriter, r *http.Request) error {
		switch r.PathValue("profile") {
		case "profile":
			pprof.Profile(w, r)
		case "trace":
			pprof.Trace(w, r)
		case "symbol":
			pprof.Symbol(w, r)
		case "cmdline":
			pprof.Cmdline(w, r)
		case "":
			pprof.Index(w, r)
		default:
			// pprof.Index serves the named runtime profiles (heap, goroutine, allocs,
			// block, mutex, threadcreate) from the last element of the path.
			pprof.Handler(r.PathValue("profile")).ServeHTTP(w, r)
		}
		return nil
	})
}
