package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/webhook"
)

// The admission webhooks' step of the chain (docs/policy.md, "Admission webhooks"). It
// runs after authorizeSteps, so a hook only ever sees a write the user may make, and
// before storeSteps, so what is judged against the stored state is what will be
// stored. For each object: the mutating hooks that match it, in their order; if they
// changed it, the result is decoded, defaulted and validated again as a document of the
// request would be, and passes authorizeSteps again as the user's own write, so no hook
// can grant what the user lacks (a privileged container, another namespace's secret);
// then the validating hooks, on the object as it will be stored.

// hookOperation is what a hook is told the write does.
func (a *admission) hookOperation(old v4.Object) string {
	switch {
	case a.op == opDelete:
		return v4.AdmitDelete
	case a.op == opCreate || (a.op == opApply && old == nil):
		return v4.AdmitCreate
	}
	return v4.AdmitUpdate
}

// callHooks runs the hooks on every target, replacing targets[i] (and its document)
// with what the mutating hooks made of it.
func (a *admission) callHooks(ctx context.Context, targets []target) error {
	mutating, validating, err := a.s.admissionHooks(ctx)
	if err != nil || len(mutating)+len(validating) == 0 {
		return err
	}
	defer a.s.webhooks.timeStep(time.Now())
	for i := range targets {
		if err := a.hookTarget(ctx, &targets[i], mutating, validating); err != nil {
			return err
		}
	}
	return nil
}

func (a *admission) hookTarget(ctx context.Context, t *target, mutating, validating []*webhook.Hook) error {
	if t.kind.System() {
		return nil // berth's own objects, never a user's write
	}
	old, err := a.storedTarget(ctx, *t)
	if err != nil {
		return err
	}
	if t.obj == nil && old == nil {
		return nil // a delete of nothing: the store answers its 404, no hook is asked
	}
	attrs := webhook.Attributes{Operation: a.hookOperation(old), Kind: t.kind, Namespace: t.ns}
	if t.obj != nil {
		attrs.Labels = t.obj.GetMeta().Labels
	}
	if old != nil {
		attrs.OldLabels = old.GetMeta().Labels
		if attrs.Labels == nil {
			attrs.Labels = attrs.OldLabels
		}
	}
	mut, val := webhook.Matching(mutating, attrs), webhook.Matching(validating, attrs)
	if len(mut)+len(val) == 0 {
		return nil
	}
	req, err := a.hookRequest(attrs.Operation, *t, old)
	if err != nil {
		return err
	}
	if len(mut) > 0 && t.obj != nil {
		obj, changed, err := a.s.webhooks.client.Mutate(ctx, mut, req)
		if err != nil {
			return refusalError(err)
		}
		if changed && a.subResource != "" {
			return httpapi.Errorf(http.StatusConflict, "the admission webhooks (%s) change %s %s/%s on %s: an action takes no patch; "+
				"write the object with the change first (berth apply)", hookNames(mut), t.kind, t.ns, t.name, a.subResource)
		}
		if changed {
			if err := a.mutated(ctx, t, obj, mut); err != nil {
				return err
			}
			if req.Object, err = json.Marshal(t.obj); err != nil {
				return err
			}
		}
	}
	if len(val) > 0 {
		if err := a.s.webhooks.client.Validate(ctx, val, req); err != nil {
			return refusalError(err)
		}
	}
	return nil
}

// storedTarget is the stored object the write replaces or deletes (nil for a create or
// when there is none).
func (a *admission) storedTarget(ctx context.Context, t target) (v4.Object, error) {
	if a.op == opCreate {
		return nil, nil
	}
	if a.old != nil && a.old.GetKind() == t.kind && a.old.GetMeta().Name == t.name && a.old.GetMeta().Namespace == t.ns {
		return a.old, nil
	}
	old, err := a.s.store.Get(ctx, t.kind, t.ns, t.name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return old, err
}

func (a *admission) hookRequest(op string, t target, old v4.Object) (webhook.Request, error) {
	req := webhook.Request{Kind: string(t.kind), Operation: op, SubResource: a.subResource, Namespace: t.ns, Name: t.name}
	var err error
	if t.obj != nil {
		if req.Object, err = json.Marshal(t.obj); err != nil {
			return req, err
		}
	}
	if old != nil {
		if req.OldObject, err = json.Marshal(old); err != nil {
			return req, err
		}
	}
	id := identityOf(a.r)
	req.UserInfo = webhook.UserInfo{Username: id.Name, UID: id.TokenID, Management: id.Management}
	if len(id.Policies) > 0 {
		if req.UserInfo.Policies, err = json.Marshal(id.Policies); err != nil {
			return req, err
		}
	}
	if id.Anonymous() {
		req.UserInfo.Username = "anonymous"
	}
	return req, nil
}

// mutated takes the hooks' object in place of t's: decoded, defaulted and validated
// again, and authorized again as the user's write.
func (a *admission) mutated(ctx context.Context, t *target, obj []byte, hooks []*webhook.Hook) error {
	by := hookNames(hooks)
	mode, err := validation(a.r)
	if err != nil {
		return err
	}
	docs, err := v4.ParseValidated(obj, mode)
	if fe, ok := errors.AsType[v4.FieldErrors](err); ok {
		ae := httpapi.Errorf(http.StatusUnprocessableEntity, "%s", httpapi.InvalidMessage(
			fmt.Sprintf("%s %s/%s as the admission webhooks (%s) changed it", t.kind, t.ns, t.name, by), fe))
		ae.Details = fe
		return ae
	}
	if err == nil && len(docs) != 1 {
		err = fmt.Errorf("%d documents", len(docs))
	}
	if err != nil {
		return httpapi.Errorf(http.StatusUnprocessableEntity, "%s %s/%s as the admission webhooks (%s) changed it is unreadable: %v", t.kind, t.ns, t.name, by, err)
	}
	doc := docs[0]
	doc.Raw = obj // the definition is what the hooks made of it
	next := targetOf(doc.Object)
	if next.kind != t.kind || next.ns != t.ns || next.name != t.name {
		return httpapi.Errorf(http.StatusUnprocessableEntity, "the admission webhooks (%s) renamed or moved %s %s/%s", by, t.kind, t.ns, t.name).
			WithDetail("metadata.name", "a webhook may not rename or move an object")
	}
	if err := a.run(ctx, next, authorizeSteps); err != nil {
		if ae, ok := errors.AsType[*httpapi.Error](err); ok {
			out := httpapi.Errorf(ae.Code, "%s %s/%s as the admission webhooks (%s) changed it: %s", t.kind, t.ns, t.name, by, ae.Message)
			out.Details = ae.Details
			return out
		}
		return fmt.Errorf("%s %s/%s as the admission webhooks (%s) changed it: %w", t.kind, t.ns, t.name, by, err)
	}
	for j := range a.docs {
		if a.docs[j].Object == t.obj {
			doc.Warnings = append(a.docs[j].Warnings, doc.Warnings...)
			a.docs[j] = doc
		}
	}
	*t = next
	return nil
}

// refusalError is the API's answer to the hooks' refusal.
func refusalError(err error) error {
	ref, ok := errors.AsType[*webhook.Refusal](err)
	if !ok {
		return err
	}
	e := httpapi.Errorf(ref.Status(), "%s", ref.Error())
	if ref.Forbidden != nil {
		e.WithDetail(ref.Forbidden.Field, ref.Forbidden.Error())
	}
	return e
}

func hookNames(hooks []*webhook.Hook) string {
	names := make([]string, len(hooks))
	for i, h := range hooks {
		names[i] = h.ID()
	}
	return strings.Join(names, ", ")
}

// hookAction runs the admission webhooks on a write the server makes for the user (a
// scale, a rollout's pause, resume or undo, an instance's stop or start, a workflow's
// suspend, resume, stop or retry, a cron trigger's run): obj is the object as it will
// be stored, op opUpdate (the stored one is read) or opCreate. The route authorized the
// action; the hooks may refuse it. A mutating hook that would change the object refuses
// it too (hookTarget): an action writes what the server computed, not a document.
func (s *Server) hookAction(ctx context.Context, sub string, op admitOp, obj v4.Object) error {
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "/v1/"+sub, nil)
	if err != nil {
		return err
	}
	a := s.newAdmission(r, op, nil)
	a.subResource = sub
	return a.callHooks(ctx, []target{targetOf(obj)})
}
