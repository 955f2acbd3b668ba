package server

import (
	"net/http"

	"github.com/berthhq/berth/internal/acl"

	v4 "github.com/berthhq/berth/api/v4"
)

type applyBody struct {
	Results []v4.ApplyResult `json:"results"`
}

// handleApply creates or updates every document of the body. The whole stream is parsed
// and validated first, so a bad document changes nothing; the store then writes all
// documents in one transaction.
func (s *Server) handleApply(w http.ResponseWriter, r *http.Request) error {
	docs, err := s.readDocuments(w, r, "the apply stream")
	if err == nil {
		noteDocuments(r, acl.VerbWrite, docs) // an audit line per document, written or refused
		err = s.checkDocuments(r, acl.VerbWrite, docs)
	}
	if err != nil {
		return err
	}
	ctx, cancel := requestContext(r)
	defer cancel()
	seen := map[string]map[string]v4.Object{}
	var services []v4.Object
	for _, d := range docs {
		m := d.Object.GetMeta()
		err := s.refuseIfControlled(ctx, d.Object.GetKind(), m.Namespace, m.Name)
		if err == nil {
			err = s.admitReads(r, d.Object)
		}
		if err == nil {
			err = s.checkReferences(ctx, d.Object, docs)
		}
		if err == nil {
			err = s.checkGPUShares(d.Object)
		}
		if svc, ok := d.Object.(*v4.Service); ok && err == nil {
			err = s.checkServicePorts(ctx, svc, docs, seen)
			if err == nil {
				err = s.checkLBClaims(ctx, svc, docs, &services)
			}
		}
		if err != nil {
			return err
		}
	}
	results, err := s.store.Apply(ctx, docs)
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
	writeJSON(w, http.StatusOK, applyBody{Results: results})
	return nil
}
