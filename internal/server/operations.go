package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// Operations (docs/api.md, Operations): a request that starts work berth carries out in
// the background answers 202 Accepted with the object, the operation and a watch URL; a
// request that conflicts with the operation in progress on the object answers 423.

// writeAccepted answers 202 with obj, op and where to watch obj change.
func writeAccepted(w http.ResponseWriter, obj v4.Object, op *v4.Operation) {
	body, err := json.Marshal(obj)
	if err != nil {
		httpapi.WriteJSON(w, http.StatusInternalServerError, httpapi.Errorf(http.StatusInternalServerError, "encode %s: %v", obj.GetKind(), err))
		return
	}
	watch := watchURL(obj)
	w.Header().Set("Location", watch)
	httpapi.WriteJSON(w, http.StatusAccepted, v4.Accepted{Object: body, Operation: op, Watch: watch})
}

// watchURL streams the changes of obj's kind filtered to its name.
func watchURL(obj v4.Object) string {
	k, m := obj.GetKind(), obj.GetMeta()
	q := url.Values{"watch": {"true"}, "name": {m.Name}}
	if !k.Namespaced() {
		return "/v1/" + k.Plural() + "?" + q.Encode()
	}
	return "/v1/namespaces/" + url.PathEscape(m.Namespace) + "/" + k.Plural() + "?" + q.Encode()
}

// refuseControlled answers 423 for an object a controller owns (a deployment's
// application): changing it directly would fight the controller.
func refuseControlled(obj v4.Object) error {
	if owner := obj.GetMeta().Annotations[v4.ControlledByAnnotation]; owner != "" {
		return fmt.Errorf("%s %s/%s is controlled by %s; change that instead: %w",
			obj.GetKind(), obj.GetMeta().Namespace, obj.GetMeta().Name, owner, store.ErrLocked)
	}
	return nil
}

// refuseIfControlled answers 423 when the stored object ns/name is owned by a controller;
// an object that does not exist yet is not.
func (s *Server) refuseIfControlled(ctx context.Context, kind v4.Kind, ns, name string) error {
	return s.refuseIfStoredControlled(ctx, kind, ns, name, s.store.Get)
}

// refuseIfControlledLocal is refuseIfControlled on the object as this server's etcd
// member has it (store.GetLocal), for a write whose transaction checks it again.
func (s *Server) refuseIfControlledLocal(ctx context.Context, kind v4.Kind, ns, name string) error {
	return s.refuseIfStoredControlled(ctx, kind, ns, name, s.store.GetLocal)
}

func (s *Server) refuseIfStoredControlled(ctx context.Context, kind v4.Kind, ns, name string,
	get func(context.Context, v4.Kind, string, string) (v4.Object, error)) error {
	if kind != v4.KindApplication && kind != v4.KindProcess {
		return nil // only deployments own objects, and those are applications or processes
	}
	obj, err := get(ctx, kind, ns, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return refuseControlled(obj)
}

// scaleRequest is the body of POST .../{plural}/{name}/scale.
type scaleRequest struct {
	Instances *int `json:"instances"`
}

// handleScale sets spec.instance of an application, process or deployment as an
// operation: the application controller ends it when the instances run (at 0, when every
// instance is gone; the object, its history and its services stay).
func (s *Server) handleScale(w http.ResponseWriter, r *http.Request) error {
	kind, err := writableKindOf(w, r)
	if err != nil {
		return err
	}
	if kind != v4.KindApplication && kind != v4.KindProcess && kind != v4.KindDeployment {
		return httpapi.Errorf(http.StatusBadRequest, "%s cannot be scaled: only applications, processes and deployments have instances", kind.Plural())
	}
	var req scaleRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4096))
	if err == nil {
		err = httpapi.DecodeStrict(body, &req)
	}
	switch {
	case err != nil:
		return httpapi.Errorf(http.StatusBadRequest, "scale body: %v", err).WithDetail("instances", "send {\"instances\": N}")
	case req.Instances == nil:
		return httpapi.Errorf(http.StatusUnprocessableEntity, "scale: instances is required").WithDetail("instances", "required: send {\"instances\": N}, 0 to stop every instance")
	case *req.Instances < 0:
		msg := fmt.Sprintf("must not be negative (0 stops every instance), got %d", *req.Instances)
		return httpapi.Errorf(http.StatusUnprocessableEntity, "scale: instances %s", msg).WithDetail("instances", msg)
	case *req.Instances > v4.MaxInstances:
		msg := fmt.Sprintf("must be at most %d, got %d", v4.MaxInstances, *req.Instances)
		return httpapi.Errorf(http.StatusUnprocessableEntity, "scale: instances %s", msg).WithDetail("instances", msg)
	}
	ns, name := r.PathValue("ns"), r.PathValue("name")
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	obj, from, op, err := s.scale(ctx, kind, ns, name, *req.Instances)
	if err != nil {
		return err
	}
	m := obj.GetMeta()
	s.store.QueueEvent(v4.Event{Type: v4.EventNormal, Reason: "Scaled", Kind: kind, Namespace: m.Namespace, Name: m.Name,
		Message: scaledMessage(from, *req.Instances)})
	writeAccepted(w, obj, op)
	return nil
}

// scale begins the operation and writes the new count, retrying on concurrent writes;
// it returns the count it replaced.
func (s *Server) scale(ctx context.Context, kind v4.Kind, ns, name string, n int) (v4.Object, int, *v4.Operation, error) {
	unlock, err := s.lockQuota(ctx, ns) // the quota's check and the write, one at a time (admit_quota.go)
	if err != nil {
		return nil, 0, nil, err
	}
	defer unlock()
	var lost error
	for range 5 {
		obj, err := s.store.Get(ctx, kind, ns, name)
		if err != nil {
			return nil, 0, nil, err
		}
		if err := refuseControlled(obj); err != nil {
			return nil, 0, nil, err
		}
		p := v4.InstancesOf(obj)
		from := *p
		op := &v4.Operation{Type: v4.OpScale, Kind: kind, Name: ns + "/" + name, Message: fmt.Sprintf("scale from %d to %d", from, n)}
		*p = n
		if sp := v4.StoppedInstancesOf(obj); *sp != nil { // a scale-down forgets the stopped instances it removes
			*sp = append([]int{}, v4.StoppedBelow(*sp, n)...)
		}
		if err := httpapi.Validate(obj); err != nil {
			return nil, 0, nil, err
		}
		if err := s.hookAction(ctx, "scale", opUpdate, obj); err != nil { // admit_webhook.go
			return nil, 0, nil, err
		}
		fence, err := s.checkObjectQuota(ctx, obj) // admit_quota.go
		if err != nil {
			return nil, 0, nil, err
		}
		// A newer scale replaces one in progress; anything else (a rollout, a move) must end first.
		if err := s.store.BeginOperation(ctx, ns, name, *op, v4.OpScale); err != nil {
			return nil, 0, nil, err
		}
		err = s.store.Update(store.WithQuotaFence(ctx, fence), obj, store.Raw{})
		if errors.Is(err, store.ErrConflict) { // a fence that moved too: counted again
			lost = err
			continue
		}
		if err != nil {
			_ = s.store.EndOperation(context.WithoutCancel(ctx), kind, ns, name, v4.OpScale)
			return nil, 0, nil, err
		}
		return obj, from, op, nil
	}
	if errors.Is(lost, store.ErrQuotaFence) {
		return nil, 0, nil, fenceConflict(lost, 5)
	}
	return nil, 0, nil, fmt.Errorf("scale %s %s/%s: %w", kind, ns, name, store.ErrConflict)
}

// scaledMessage is the Scaled event's message.
func scaledMessage(from, to int) string {
	msg := fmt.Sprintf("scaled from %d to %d", from, to)
	if to == 0 && from > 0 {
		msg += ": every instance stops; the object and its history stay"
	}
	return msg
}
