package server

import (
	"context"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
)

// The HTTP plumbing the server shares with the agent protocol (internal/agentapi) is
// httpapi's; these bind the parts that hold per-server state to this server.

// streamContext ends when the client goes away or the server closes its streams.
func (s *Server) streamContext(r *http.Request) (context.Context, context.CancelFunc) {
	return httpapi.StreamContext(s.streams, r)
}

// record writes an event about obj (httpapi.Record).
func (s *Server) record(obj v4.Object, reason, verb string) {
	httpapi.Record(s.store, obj, reason, verb)
}

// writeError writes err as the JSON error envelope.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	s.errs.Write(w, r, err)
}

// serve adapts h to net/http: the one place where a route's error becomes its answer.
func (s *Server) serve(h httpapi.HandlerFunc) http.HandlerFunc { return s.errs.Serve(h) }

// readBody reads the whole body within the server's limit.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return s.bodyReader.Read(w, r)
}
