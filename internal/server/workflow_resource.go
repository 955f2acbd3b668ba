package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/audit"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// DoResourceStep performs a workflow's resource step for the workflow controller
// (controller.ResourceSteps): the workflow's submitter is authenticated again as it is
// now (a revoked or expired token, or a policy that no longer grants the write, fails
// the step), and the object passes the whole admission chain of a direct create, apply
// or delete by that identity, namespace limits included, before the store writes it.
func (s *Server) DoResourceStep(ctx context.Context, step controller.ResourceStep) (controller.ResourceResult, error) {
	id, err := s.submitterIdentity(ctx, step.Submitter)
	if err != nil {
		s.auditResourceStep(&acl.Identity{TokenID: step.Submitter}, step, httpapi.Errorf(http.StatusUnauthorized, "%v", err))
		return controller.ResourceResult{}, fmt.Errorf("workflow %s: %w", step.Workflow, err)
	}
	res, err := s.resourceStepAs(ctx, id, step)
	s.auditResourceStep(id, step, err)
	return res, err
}

// auditResourceStep writes the audit line of a resource step: the submitter's write,
// via the workflow that made it.
func (s *Server) auditResourceStep(id *acl.Identity, step controller.ResourceStep, err error) {
	if s.auditLog == nil {
		return
	}
	m := step.Object.GetMeta()
	verb, method := acl.VerbWrite, http.MethodPost
	if step.Action == v4.WfResourceDelete {
		method = http.MethodDelete
	}
	status := http.StatusOK
	if err != nil {
		status = httpapi.FromError(err).Code
	}
	e := audit.Entry{Time: time.Now().UTC(), Who: id.String(), Verb: verb, Kind: string(step.Object.GetKind()),
		Namespace: m.Namespace, Name: m.Name, Method: method, Path: "/v1/apply",
		Via: "resource step of workflow " + step.Workflow, Status: status}
	if rerr := s.auditLog.Record(e); rerr != nil {
		s.log.Error("audit record lost", "err", rerr, "who", e.Who, "via", e.Via)
	}
}

// resourceStepAs performs step as id: the admission chain, then the write.
func (s *Server) resourceStepAs(ctx context.Context, id *acl.Identity, step controller.ResourceStep) (controller.ResourceResult, error) {
	obj := step.Object
	kind, m := obj.GetKind(), obj.GetMeta()
	ctx = store.WithNamespaceLimits(context.WithValue(ctx, identityKey{}, id))
	// The admission chain reads who asks, and for a delete the object's name, from a
	// request: this one stands for the submitter's write.
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "/v1/apply", nil)
	if err != nil {
		return controller.ResourceResult{}, err
	}
	r.SetPathValue("ns", m.Namespace)
	r.SetPathValue("name", m.Name)
	doc := v4.Document{Object: obj, Raw: step.Manifest}
	why := "by workflow " + step.Workflow
	switch step.Action {
	case v4.WfResourceDelete:
		if err := s.newAdmission(r, opDelete, nil).admit(ctx, target{kind: kind, ns: m.Namespace, name: m.Name}); err != nil {
			return controller.ResourceResult{}, fmt.Errorf("delete %s %s/%s as %s: %w", kind, m.Namespace, m.Name, id, err)
		}
		gone, err := s.store.Delete(ctx, kind, m.Namespace, m.Name, "")
		if err != nil {
			return controller.ResourceResult{}, fmt.Errorf("delete %s %s/%s: %w", kind, m.Namespace, m.Name, err)
		}
		s.record(gone, "Deleted", "deleted "+why)
		return controller.ResourceResult{Name: m.Name}, nil
	case v4.WfResourceCreate:
		markStep(obj, step.Key)
		a := s.newAdmission(r, opCreate, []v4.Document{doc})
		defer a.done() // this ctx is the controller's: the lock is released here, not at its end
		if err := a.admit(ctx, targetOf(obj)); err != nil {
			return controller.ResourceResult{}, fmt.Errorf("create %s %s/%s as %s: %w", kind, m.Namespace, m.Name, id, err)
		}
		doc, obj = a.docs[0], a.docs[0].Object // as the admission webhooks left it
		if err := a.fencedWrite(ctx, func(ctx context.Context) error { return s.store.Create(ctx, obj, rawOf(doc)) }); err != nil {
			if res, ok := s.createdByStep(ctx, obj, step.Key, err); ok {
				return res, nil
			}
			return controller.ResourceResult{}, fmt.Errorf("create %s %s/%s: %w", kind, m.Namespace, m.Name, err)
		}
		s.record(obj, "Created", "created "+why)
		return controller.ResourceResult{Name: m.Name, ResourceVersion: m.ResourceVersion}, nil
	case v4.WfResourceApply:
		docs := []v4.Document{doc}
		a := s.newAdmission(r, opApply, docs)
		defer a.done()
		if err := a.admit(ctx, targetOf(obj)); err != nil {
			return controller.ResourceResult{}, fmt.Errorf("apply %s %s/%s as %s: %w", kind, m.Namespace, m.Name, id, err)
		}
		obj = docs[0].Object // as the admission webhooks left it
		var results []v4.ApplyResult
		err := a.fencedWrite(ctx, func(ctx context.Context) (err error) {
			results, err = s.store.Apply(store.RefuseControlled(ctx), docs)
			return err
		})
		if err != nil {
			return controller.ResourceResult{}, fmt.Errorf("apply %s %s/%s: %w", kind, m.Namespace, m.Name, err)
		}
		res := controller.ResourceResult{Name: m.Name}
		if len(results) == 1 {
			res.ResourceVersion = results[0].ResourceVersion
			switch results[0].Action {
			case v4.ActionCreated:
				s.record(obj, "Created", "created "+why)
			case v4.ActionUpdated:
				s.record(obj, "Updated", "updated "+why)
			}
		}
		return res, nil
	}
	return controller.ResourceResult{}, fmt.Errorf("unknown resource action %q", step.Action)
}

// markStep marks the object a resource step creates with the step's key.
func markStep(obj v4.Object, key string) {
	if key == "" {
		return
	}
	m := obj.GetMeta()
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[v4.WfCreatedByStepAnnotation] = key
}

// createdByStep tells a create that failed as its object exists, because this step
// created it before its pass died, from one that met another object: the stored object
// carries the step's key. Then the step succeeded, with the stored object's version.
func (s *Server) createdByStep(ctx context.Context, obj v4.Object, key string, err error) (controller.ResourceResult, bool) {
	if key == "" || !errors.Is(err, store.ErrAlreadyExists) {
		return controller.ResourceResult{}, false
	}
	m := obj.GetMeta()
	stored, gerr := s.store.Get(ctx, obj.GetKind(), m.Namespace, m.Name)
	if gerr != nil || stored.GetMeta().Annotations[v4.WfCreatedByStepAnnotation] != key {
		return controller.ResourceResult{}, false
	}
	return controller.ResourceResult{Name: m.Name, ResourceVersion: stored.GetMeta().ResourceVersion}, true
}

// submitterIdentity is the identity a workflow's submitter annotation names, with its
// policies as they are now.
func (s *Server) submitterIdentity(ctx context.Context, sub string) (*acl.Identity, error) {
	switch sub {
	case "":
		return nil, errors.New("no submitter is recorded on it (it was not written through the API): resource steps run with the submitter's rights; submit it again")
	case v4.WfSubmitterAnonymous:
		anon := &acl.Identity{}
		p, err := s.aclCache.policy(ctx, s.store, acl.AnonymousPolicy)
		switch {
		case err == nil:
			anon.Policies = []*acl.Policy{p}
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
		return anon, nil
	}
	t, err := s.aclCache.token(ctx, s.store, sub)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("its submitter, token berth-acl-%s, is unknown or revoked: a resource step runs with the submitter's rights", sub)
	}
	if err != nil {
		return nil, fmt.Errorf("read the submitter's token: %w", err)
	}
	if t.Expired(time.Now()) {
		return nil, fmt.Errorf("its submitter, token berth-acl-%s, expired at %s: a resource step runs with the submitter's rights",
			t.ID, t.Expires.Format(time.RFC3339))
	}
	return s.identityOf(ctx, t)
}
