package server

import (
	"net/http"

	"github.com/berthhq/berth/internal/store"
)

type applyBody struct {
	Results []store.ApplyResult `json:"results"`
}

// handleApply creates or updates every document of the body. The whole stream is parsed
// and validated first, so a bad document changes nothing; the store then writes all
// documents in one transaction.
func (s *Server) handleApply(w http.ResponseWriter, r *http.Request) {
	docs, err := s.readDocuments(w, r, "the apply stream")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := requestContext(r)
	defer cancel()
	results, err := s.store.Apply(ctx, docs)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	for i, res := range results {
		switch res.Action {
		case store.ActionCreated:
			s.record(ctx, docs[i].Object, "Created", "created")
		case store.ActionUpdated:
			s.record(ctx, docs[i].Object, "Updated", "updated")
		}
	}
	writeJSON(w, http.StatusOK, applyBody{Results: results})
}
