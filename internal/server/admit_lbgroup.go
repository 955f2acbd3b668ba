package server

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
)

// checkLBClaims refuses a service (422) that claims, in a load-balancer group it is
// exported to (BCSGROUP), what another service of that group holds: a TCP port (each
// listens on its service port on every node of the group) or an HTTP host and path (all
// share the group's HTTP port); or a TCP port the group's nodes already use
// (admit_lbgroup_nodes.go). Services of the same request (docs) count as stored.
// Two requests racing past each other are caught on the nodes: the group serves the
// first and reports the other (docs/services.md, "Load-balancer groups").
//
// The services (every namespace) come from the server's cache, once per request: stored
// points to the request's copy (nil: not read yet).
func (s *Server) checkLBClaims(ctx context.Context, svc *v4.Service, docs []v4.Document, stored *[]v4.Object) error {
	groups := svc.LBGroups()
	if len(groups) == 0 {
		return nil
	}
	if *stored == nil {
		objs, err := s.listCurrent(ctx, s.services)
		if err != nil {
			return fmt.Errorf("read the services of load-balancer groups: %w", err)
		}
		if objs == nil {
			objs = []v4.Object{} // read: none stored
		}
		*stored = objs
	}
	others := map[string]*v4.Service{}
	for _, o := range *stored {
		if other, ok := o.(*v4.Service); ok {
			others[other.Metadata.Namespace+"/"+other.Metadata.Name] = other
		}
	}
	for _, d := range docs {
		if other, ok := d.Object.(*v4.Service); ok {
			others[other.Metadata.Namespace+"/"+other.Metadata.Name] = other
		}
	}
	self := svc.Metadata.Namespace + "/" + svc.Metadata.Name
	delete(others, self)
	var fe v4.FieldErrors
	for i, sp := range svc.Spec.Ports {
		claim, field := lbClaim(sp), fmt.Sprintf("spec.ports[%d].servicePort", i)
		if claim == "" {
			continue
		}
		if sp.IsHTTP() {
			field = fmt.Sprintf("spec.ports[%d].domainName", i)
		}
		for _, key := range slices.Sorted(maps.Keys(others)) {
			other := others[key]
			shared := slices.DeleteFunc(slices.Clone(groups), func(g string) bool { return !other.InLBGroup(g) })
			if len(shared) == 0 || !slices.ContainsFunc(other.Spec.Ports, func(op v4.ServicePort) bool { return lbClaim(op) == claim }) {
				continue
			}
			fe = append(fe, v4.FieldError{Field: field, Message: fmt.Sprintf("%s in load-balancer group %s is service %s's; give another %s",
				claim, strings.Join(shared, ", "), key, map[bool]string{true: "host or path", false: "service port"}[sp.IsHTTP()])})
			break
		}
	}
	nodeFE, err := s.lbNodePortErrors(ctx, svc, groups)
	if err != nil {
		return err
	}
	for _, e := range nodeFE {
		if !slices.ContainsFunc(fe, func(c v4.FieldError) bool { return c.Field == e.Field }) {
			fe = append(fe, e)
		}
	}
	if len(fe) == 0 {
		return nil
	}
	ae := httpapi.Errorf(http.StatusUnprocessableEntity, "%s", httpapi.InvalidMessage("service "+self, fe))
	ae.Details = fe
	return ae
}

// lbClaim is what a service port holds in its load-balancer groups: "TCP port N", or
// "HTTP host H path P" (any host, any path when empty); "" for a UDP port, which
// HAProxy does not forward.
func lbClaim(sp v4.ServicePort) string {
	switch {
	case strings.EqualFold(sp.Protocol, "udp"):
		return ""
	case sp.IsHTTP():
		host, path := strings.ToLower(sp.DomainName), sp.Path
		if host == "" {
			host = "*"
		}
		if path == "" {
			path = "/"
		}
		return fmt.Sprintf("HTTP host %s path %s", host, path)
	default:
		return fmt.Sprintf("TCP port %d", sp.ServicePort)
	}
}
