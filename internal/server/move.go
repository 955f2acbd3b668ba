package server

import (
	"errors"
	"io"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/httpapi"
)

// handleMove moves one instance (docs/maintenance.md): POST
// /v1/namespaces/{ns}/taskgroups/{name}/move with {"node": "target", "force": false}.
// It begins an OpMove on the owner and answers 202; the application controller starts
// the replacement, waits for it to be ready, then stops the old run.
func (s *Server) handleMove(w http.ResponseWriter, r *http.Request) error {
	var req v4.MoveRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4096))
	if err == nil && len(body) > 0 {
		err = httpapi.DecodeStrict(body, &req)
	}
	if err != nil {
		return httpapi.Errorf(http.StatusBadRequest, "move body: %v", err).
			WithDetail("node", `send {"node": "NODE", "force": false}; without node any other node will do`)
	}
	ns, name := r.PathValue("ns"), r.PathValue("name")
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	tg, op, err := controller.RequestMove(ctx, s.store, s.feed, ns, name, req, "")
	if err != nil {
		return moveError(err)
	}
	s.record(tg, "MoveRequested", "asked to move to "+tg.Metadata.Annotations[v4.MoveToAnnotation])
	writeAccepted(w, tg, op)
	return nil
}

// moveError gives a refused move its status: 404 for a task group or node that does not
// exist, 422 for one that cannot move (with the field at fault); 423 (locked) passes.
func moveError(err error) error {
	var me *controller.MoveError
	if !errors.As(err, &me) {
		return err
	}
	code := http.StatusUnprocessableEntity
	if me.NotFound {
		code = http.StatusNotFound
	}
	ae := httpapi.Errorf(code, "%s", me.Message)
	if me.Field != "" {
		ae = ae.WithDetail(me.Field, me.Message)
	}
	return ae
}
