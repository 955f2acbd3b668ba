package server

import (
	"context"
	"net/http"

	"github.com/berthhq/berth/internal/acl"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

type applyBody struct {
	Results []v4.ApplyResult `json:"results"`
}

// handleApply creates or updates every document of the body. The whole stream is parsed
// and validated first, so a bad document changes nothing; the store then writes all
// documents in one transaction.
func (s *Server) handleApply(w http.ResponseWriter, r *http.Request) error {
	docs, err := s.readDocuments(w, r, "the apply stream")
	if err != nil {
		return err
	}
	noteDocuments(r, acl.VerbWrite, docs) // an audit line per document, written or refused
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	a := s.newAdmission(r, opApply, docs)
	defer a.done() // after the write: the namespaces' quota locks (admit_quota.go)
	if err := a.admit(ctx, targetsOf(docs)...); err != nil {
		return err
	}
	var results []v4.ApplyResult
	err = a.fencedWrite(ctx, func(ctx context.Context) (err error) { // admit_quota_fence.go
		results, err = s.store.Apply(store.RefuseControlled(ctx), docs)
		return err
	})
	if err != nil {
		return err
	}
	for i, res := range results {
		results[i].Warnings = docs[i].Warnings
		switch res.Action {
		case v4.ActionCreated:
			s.record(docs[i].Object, "Created", "created")
		case v4.ActionUpdated:
			s.record(docs[i].Object, "Updated", "updated")
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, applyBody{Results: results})
	return nil
}
