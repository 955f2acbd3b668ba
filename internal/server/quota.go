package server

import (
	"fmt"
	"net/http"
	"regexp"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/bytesize"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/quota"
	"github.com/berthhq/berth/internal/store"
)

// Namespace limits (docs/security.md, "Namespace limits"; the store's quota.go): every
// namespace may hold a bounded number of objects and bytes, so that no tenant can fill
// etcd's space quota for the others. Users read their namespace's limits and usage; only
// an administrator (admin on cluster) sets them.
func (s *Server) quotaRoutes(mux *httpapi.Mux) {
	mux.Handle("GET /v1/namespaces/{ns}/quota", on(acl.VerbRead, kindNamespaceQuota), s.handleQuotaGet)
	mux.Handle("PUT /v1/namespaces/{ns}/quota", adminCluster, s.handleQuotaPut)
	mux.Handle("DELETE /v1/namespaces/{ns}/quota", adminCluster, s.handleQuotaDelete)
}

// kindNamespaceQuota is what reading a namespace's limits needs (read, like the kinds of
// the namespace: a kind glob "*" grants it).
const kindNamespaceQuota = "namespacequota"

// namespacePattern is what a namespace may be named (v4's names), or v4.DefaultNamespace.
var namespacePattern = regexp.MustCompile(`^[a-z]([a-z0-9-]{0,62})$`)

// quotaNamespace is the path's namespace, or the 400 of one no object can be in.
func quotaNamespace(r *http.Request) (string, error) {
	ns := r.PathValue("ns")
	if ns != v4.DefaultNamespace && !namespacePattern.MatchString(ns) {
		return "", httpapi.Errorf(http.StatusBadRequest, "%q is not a namespace", truncateText(ns, 80)).
			WithDetail("namespace", "lowercase letters, digits and '-', starting with a letter, at most 63")
	}
	return ns, nil
}

func (s *Server) handleQuotaGet(w http.ResponseWriter, r *http.Request) error {
	ns, err := quotaNamespace(r)
	if err != nil {
		return err
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	q, err := s.namespaceQuota(ctx, ns)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, q)
	return nil
}

// handleQuotaPut sets a namespace's limits: {"objects": N, "bytes": B}, a field left out
// (or 0) keeping the cluster's default. It also counts the namespace's usage again.
func (s *Server) handleQuotaPut(w http.ResponseWriter, r *http.Request) error {
	ns, err := quotaNamespace(r)
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var l store.NamespaceLimits
	if err := httpapi.DecodeStrict(body, &l); err != nil {
		return httpapi.Errorf(http.StatusBadRequest, "the body is not namespace limits: %v", err).
			WithDetail("objects", `send {"objects": N, "bytes": B, "resources": {...}, "limitDefaults": {...}}; a field left out keeps the default`)
	}
	fe := l.Resources.Validate("resources", quota.Names)
	fe = append(fe, l.LimitDefaults.Validate("limitDefaults")...)
	if l.Objects < 0 {
		fe = append(fe, v4.FieldError{Field: "objects", Message: fmt.Sprintf("must be 0 (the default) or more, got %d", l.Objects)})
	}
	if l.Bytes < 0 {
		fe = append(fe, v4.FieldError{Field: "bytes", Message: fmt.Sprintf("must be 0 (the default) or more, got %d", l.Bytes)})
	}
	if len(fe) > 0 {
		ae := httpapi.Errorf(http.StatusUnprocessableEntity, "%s", httpapi.InvalidMessage("limits of namespace "+ns, fe))
		ae.Details = fe
		return ae
	}
	if r.URL.Query().Get("force") != "true" {
		if err := s.refuseBelowUsage(r, ns, l.Resources); err != nil {
			return err
		}
	}
	return s.setLimits(w, r, ns, l)
}

// handleQuotaDelete gives a namespace the cluster's default limits again.
func (s *Server) handleQuotaDelete(w http.ResponseWriter, r *http.Request) error {
	ns, err := quotaNamespace(r)
	if err != nil {
		return err
	}
	return s.setLimits(w, r, ns, store.NamespaceLimits{})
}

func (s *Server) setLimits(w http.ResponseWriter, r *http.Request, ns string, l store.NamespaceLimits) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	if _, err := s.store.SetNamespaceLimits(ctx, ns, l); err != nil {
		return err
	}
	q, err := s.namespaceQuota(ctx, ns)
	if err != nil {
		return err
	}
	s.store.QueueEvent(v4.Event{Type: v4.EventNormal, Reason: "NamespaceLimitsSet", Namespace: ns, Name: ns,
		Message: fmt.Sprintf("namespace %s may hold %d objects and %s (default %v); it holds %d and %s",
			ns, q.Limits.Objects, bytesize.Format(q.Limits.Bytes), q.Default, q.Usage.Objects, bytesize.Format(q.Usage.Bytes))})
	httpapi.WriteJSON(w, http.StatusOK, q)
	return nil
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
