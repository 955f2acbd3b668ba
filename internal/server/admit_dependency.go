package server

import (
	"fmt"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/httpapi"
)

// A workload's dependencies (docs/dependencies.md) are pods of their own namespace, which
// the dependency controller starts on the nodes where the dependents land and keeps while
// they live. A dependency of another namespace is that namespace's: depending on it starts
// its pods where the writer's workloads go, so the writer must be able to read it there,
// as sharing one (a team's log agent used by others) means.

// admitReads checks what a written object would let its writer reach in other
// namespaces, or read in its own: a notify's subscriptions (admit_notify.go), a volume's
// secret, a pod's volumes (admit_volume.go, admit_volume_claims.go) and a workload's
// dependencies.
// Every write of an object passes it (admitReach, admission.go), a rollout's undo included.
func (s *Server) admitReads(r *http.Request, obj v4.Object) error {
	if err := s.admitNotify(r, obj); err != nil {
		return err
	}
	if err := s.admitVolume(r, obj); err != nil {
		return err
	}
	if err := s.admitVolumeReads(r, obj); err != nil {
		return err
	}
	if err := admitArtifactRepoSecrets(r, obj); err != nil {
		return err
	}
	return s.admitDependencies(r, obj)
}

// admitDependencies refuses, with a 403 naming the field, a dependency in a namespace
// other than the workload's own that the writer may not read.
func (s *Server) admitDependencies(r *http.Request, obj v4.Object) error {
	spec := v4.PodSpecOf(obj)
	if spec == nil {
		return nil
	}
	id := identityOf(r)
	own := obj.GetMeta().Namespace
	for i, dep := range spec.Dependencies {
		if dep.Namespace == "" || dep.Namespace == own {
			continue
		}
		req := acl.Request{Verb: acl.VerbRead, Kind: string(v4.KindDependency), Namespace: dep.Namespace}
		if id.Allowed(req) {
			continue
		}
		field := fmt.Sprintf("spec.template.spec.dependencies[%d].namespace", i)
		return httpapi.Errorf(http.StatusForbidden, "%s: %s may not depend on what it may not read: it may not %s", field, id, req).
			WithDetail(field, "needs "+req.String())
	}
	return nil
}
