package server

import (
	"net/http"
	"slices"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/httpapi"
)

// handleNamespaces lists the namespaces the caller may read something in: those that
// hold objects (store.Namespaces), and those its policies name, which it may use before
// anything is in them. A namespace the token may read nothing in is not named, so a
// tenant's token does not learn the others'.
func (s *Server) handleNamespaces(w http.ResponseWriter, r *http.Request) error {
	id := identityOf(r)
	if !id.Management && len(id.Policies) == 0 {
		// Nobody with rights (anonymous without an anonymous policy): nothing to read.
		httpapi.WriteJSON(w, http.StatusOK, v4.NamespaceList{Items: []string{}})
		return nil
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	held, err := s.store.Namespaces(ctx)
	if err != nil {
		return err
	}
	names := append(held, policyNamespaces(id)...)
	slices.Sort(names)
	names = slices.Compact(names)
	out := v4.NamespaceList{Items: make([]string, 0, len(names))}
	for _, ns := range names {
		if readsIn(id, ns) {
			out.Items = append(out.Items, ns)
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

// readableKinds are the kinds whose read right makes a namespace the caller's to see.
var readableKinds = append(v4.Kinds(), v4.KindTaskGroup)

// readsIn reports whether id may read some kind in ns.
func readsIn(id *acl.Identity, ns string) bool {
	return slices.ContainsFunc(readableKinds, func(k v4.Kind) bool {
		return id.Allowed(acl.Request{Verb: acl.VerbRead, Kind: string(k), Namespace: ns})
	})
}

// policyNamespaces are the namespaces id's policies name literally (not a glob).
func policyNamespaces(id *acl.Identity) []string {
	var out []string
	for _, p := range id.Policies {
		for _, rule := range p.Rules {
			for _, ns := range rule.Namespaces {
				if ns != "" && !strings.ContainsAny(ns, `*?[\`) {
					out = append(out, ns)
				}
			}
		}
	}
	return out
}
