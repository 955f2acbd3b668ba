package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/httpapi"
)

// handleReplace replaces the instances of an application or process that do not run its
// stored pod template (docs/lifecycle.md, "Replacing instances"): POST
// /v1/namespaces/{ns}/{plural}/{name}/replace with {"instances": N} for the first N (every
// one without it). It begins an OpReplace, superseding one under way, and answers 202
// with the operation; the application controller moves the instances one at a time.
// With nothing to replace it begins none and answers 202 without an operation.
func (s *Server) handleReplace(w http.ResponseWriter, r *http.Request) error {
	kind, err := writableKindOf(w, r)
	if err != nil {
		return err
	}
	var req v4.ReplaceRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4096))
	if err == nil && len(body) > 0 {
		err = httpapi.DecodeStrict(body, &req)
	}
	if err != nil {
		return httpapi.Errorf(http.StatusBadRequest, "replace body: %v", err).
			WithDetail("instances", `send {"instances": N} for the first N instances, {} for every one`)
	}
	ns, name := r.PathValue("ns"), r.PathValue("name")
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	obj, op, err := controller.RequestReplace(ctx, s.store, kind, ns, name, req)
	if err != nil {
		return replaceError(err)
	}
	noteObjects(r, acl.VerbWrite, obj)
	if op != nil {
		s.record(obj, "ReplaceRequested", op.Message)
	}
	writeAccepted(w, obj, op)
	return nil
}

// replaceError gives a refused replace its status: 404 for a workload that does not
// exist, 422 naming the field at fault; 423 (locked) passes.
func replaceError(err error) error {
	var re *controller.ReplaceError
	if !errors.As(err, &re) {
		return err
	}
	code := http.StatusUnprocessableEntity
	if re.NotFound {
		code = http.StatusNotFound
	}
	ae := httpapi.Errorf(code, "%s", re.Message)
	if re.Field != "" {
		ae = ae.WithDetail(re.Field, fmt.Sprint(re.Message))
	}
	return ae
}
