package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// handleInstance serves POST /v1/namespaces/{ns}/{plural}/{name}/instances/{index}/{stop|start}
// (docs/lifecycle.md, "Stopped instances"): it adds the instance (every one for the
// index "all") to spec.stoppedInstances of an application, process or deployment, or
// takes it out, and answers 202 with the object; the controllers stop or start the
// instance. Asking for the state an instance is already in changes nothing and answers
// the same.
func (s *Server) handleInstance(w http.ResponseWriter, r *http.Request) error {
	action := r.PathValue("action")
	if action != "stop" && action != "start" {
		return httpapi.Errorf(http.StatusNotFound, "unknown instance action %q (stop or start)", action)
	}
	kind, err := writableKindOf(w, r)
	if err != nil {
		return err
	}
	if kind != v4.KindApplication && kind != v4.KindProcess && kind != v4.KindDeployment {
		return httpapi.Errorf(http.StatusUnprocessableEntity, "%s have no numbered instances to %s: only applications, processes and deployments do", kind.Plural(), action).
			WithDetail("kind", "application, process or deployment")
	}
	idx, err := strconv.Atoi(r.PathValue("index"))
	switch {
	case r.PathValue("index") == everyInstance:
		idx = -1
	case err != nil || idx < 0:
		return httpapi.Errorf(http.StatusBadRequest, "instance index %q is not a whole number from 0, nor %q", r.PathValue("index"), everyInstance).
			WithDetail("index", "the instance's index, from 0 (berth get taskgroups shows it), or all")
	}
	ns, name := r.PathValue("ns"), r.PathValue("name")
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	obj, changed, err := s.setStopped(ctx, kind, ns, name, idx, action == "stop")
	if err != nil {
		return err
	}
	noteObjects(r, acl.VerbWrite, obj)
	if changed {
		which := "instance " + strconv.Itoa(idx)
		if idx < 0 {
			which = "every instance"
		}
		reason, verb := "InstanceStopped", which+" stopped"
		if action == "start" {
			reason, verb = "InstanceStarted", which+" started"
		}
		s.record(obj, reason, verb)
	}
	writeAccepted(w, obj, nil)
	return nil
}

// everyInstance, in place of an index, stops or starts every instance at once.
const everyInstance = "all"

// setStopped writes instance idx (every one when idx < 0) of kind ns/name stopped or not,
// retrying on concurrent writes; it reports whether the list changed.
func (s *Server) setStopped(ctx context.Context, kind v4.Kind, ns, name string, idx int, stop bool) (v4.Object, bool, error) {
	for range 5 {
		obj, err := s.store.Get(ctx, kind, ns, name)
		if err != nil {
			return nil, false, err
		}
		if err := refuseControlled(obj); err != nil {
			return nil, false, err
		}
		if n := *v4.InstancesOf(obj); idx >= n && idx >= 0 {
			msg := fmt.Sprintf("%s %s/%s has %d instances (indexes 0 to %d), no instance %d", kind, ns, name, n, n-1, idx)
			return nil, false, httpapi.Errorf(http.StatusUnprocessableEntity, "%s", msg).WithDetail("index", msg)
		}
		p := v4.StoppedInstancesOf(obj)
		list, changed := v4.SetStopped(*p, idx, stop)
		if idx < 0 {
			list = nil
			if stop {
				list = make([]int, *v4.InstancesOf(obj))
				for i := range list {
					list[i] = i
				}
			}
			changed = !slices.Equal(list, *p)
		}
		if !changed {
			return obj, false, nil
		}
		if list == nil {
			list = []int{} // set, not left out: an update without the list keeps the stored one
		}
		*p = list
		if err := s.hookAction(ctx, "instances", opUpdate, obj); err != nil { // admit_webhook.go
			return nil, false, err
		}
		err = s.store.Update(ctx, obj, store.Raw{})
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		return obj, true, nil
	}
	return nil, false, fmt.Errorf("instance %d of %s %s/%s: %w", idx, kind, ns, name, store.ErrConflict)
}
