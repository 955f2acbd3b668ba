package server

import (
	"context"
	"net/http"
	"strings"

	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/quota"
	"github.com/berthhq/berth/internal/store"
)

// namespaceQuotaView is what GET /v1/namespaces/{ns}/quota answers: the storage limits
// and usage (store.NamespaceQuota, whose limits carry the resource quota and the limit
// defaults) and what the namespace's objects ask of the cluster, recomputed now.
type namespaceQuotaView struct {
	store.NamespaceQuota
	ResourceUsage quota.List `json:"resourceUsage"`
}

func (s *Server) namespaceQuota(ctx context.Context, ns string) (namespaceQuotaView, error) {
	q, err := s.store.NamespaceQuota(ctx, ns)
	if err != nil {
		return namespaceQuotaView{}, err
	}
	u, err := s.store.ResourceUsage(ctx, ns)
	if err != nil {
		return namespaceQuotaView{}, err
	}
	for _, k := range quota.Names { // every resource shown, 0 included
		u[k] += 0
	}
	return namespaceQuotaView{NamespaceQuota: q, ResourceUsage: u}, nil
}

// refuseBelowUsage is the 409 of a quota set below what the namespace already asks:
// nothing running is stopped by a quota, so setting one below the usage needs force
// (?force=true, berth quota set --force) to say that the namespace is to shrink by
// itself.
func (s *Server) refuseBelowUsage(r *http.Request, ns string, limits quota.List) error {
	if len(limits) == 0 {
		return nil
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	u, err := s.store.ResourceUsage(ctx, ns)
	if err != nil {
		return err
	}
	over := quota.Over(limits, u)
	if len(over) == 0 {
		return nil
	}
	return httpapi.Errorf(http.StatusConflict, "namespace %s already uses more than the quota asked: %s; free some first, or set it with force (?force=true, --force): running work is not stopped, new work waits",
		ns, strings.Join(over, ", ")).WithDetail("resources", "below the namespace's usage")
}
