package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// checkDependencyDelete refuses (409) to delete a dependency that live task groups still
// declare, unless the request says ?force=true (deployd's RemoveSpec(force)); the
// dependency controller then stops its pods and the dependents run without it.
func (s *Server) checkDependencyDelete(ctx context.Context, r *http.Request) error {
	force, err := httpapi.BoolParam(r.URL.Query().Get("force"), "force")
	if err != nil || force {
		return err
	}
	ns, name := r.PathValue("ns"), r.PathValue("name")
	if _, err := s.store.Get(ctx, v4.KindDependency, ns, name); err != nil {
		return nil // the delete itself reports a missing dependency (404) or a store failure
	}
	tgs, _, err := store.Typed[*v4.TaskGroup](s.store, v4.KindTaskGroup).List(ctx, "")
	if err != nil {
		return fmt.Errorf("list the dependents of dependency %s/%s: %w", ns, name, err)
	}
	n, owners := controller.DependentsOf(ns, name, tgs)
	if n == 0 {
		return nil
	}
	names := make([]string, 0, len(owners))
	for _, o := range owners {
		names = append(names, fmt.Sprintf("%s %s/%s", o.Kind, o.Namespace, o.Name))
	}
	noun := "task groups"
	if n == 1 {
		noun = "task group"
	}
	return httpapi.Errorf(http.StatusConflict, "dependency %s/%s is used by %d %s (%s): stop them first, or delete with ?force=true (berth delete --force) to stop its pods anyway",
		ns, name, n, noun, strings.Join(names, ", "))
}
