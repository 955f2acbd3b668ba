package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/redact"
	"github.com/berthhq/berth/internal/store"
)

// beginRollout begins the rollout operation when obj, a replaced deployment, changes the
// stored template: the update then answers 202 with the operation, which the deployment
// controller ends when every instance of the new revision is available. A newer template
// supersedes the rollout (or undo, or scale) in progress, as deployd let a new upgrade
// replace the running one. Other objects and unchanged templates begin nothing.
func (s *Server) beginRollout(ctx context.Context, obj v4.Object) (*v4.Operation, error) {
	d, ok := obj.(*v4.Deployment)
	if !ok || d.Spec.Template == nil {
		return nil, nil
	}
	ns, name := d.Metadata.Namespace, d.Metadata.Name
	stored, err := s.store.Get(ctx, v4.KindDeployment, ns, name)
	if err != nil {
		return nil, nil // the write reports a missing object
	}
	old := stored.(*v4.Deployment).Spec.Template
	if old != nil && v4.TemplateHash(old) == v4.TemplateHash(d.Spec.Template) {
		return nil, nil
	}
	op := &v4.Operation{Type: v4.OpRollout, Kind: v4.KindDeployment, Name: ns + "/" + name, Message: "rollout to the new template"}
	if err := s.store.BeginOperation(ctx, ns, name, *op, v4.OpRollout, v4.OpUndo, v4.OpScale); err != nil {
		return nil, err
	}
	return op, nil
}

// Rollout endpoints (docs/deployments.md): pause, resume and undo change the
// deployment's stored state (status.paused, status.phase, spec.template); the deployment
// controller acts on it, so they answer 202 with the rollout operation, if any.

// handleRollout serves POST .../deployments/{name}/rollout/{pause|resume|undo}.
func (s *Server) handleRollout(w http.ResponseWriter, r *http.Request) error {
	action := r.PathValue("action")
	if action != "pause" && action != "resume" && action != "undo" {
		return httpapi.Errorf(http.StatusNotFound, "unknown rollout action %q (pause, resume or undo)", action)
	}
	to := 0
	if v := r.URL.Query().Get("revision"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || action != "undo" {
			return httpapi.Errorf(http.StatusBadRequest, "bad query parameter revision=%q", v).
				WithDetail("revision", "only undo takes a revision, a whole number of at least 1")
		}
		to = n
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	// An undo writes a template someone else may have written: its privileges and what it
	// reaches in other namespaces are the requester's to hold, as for any write of it.
	a := s.newAdmission(r, opUpdate, nil)
	allow := func(d *v4.Deployment) (*store.QuotaFence, error) {
		if err := a.authorize(ctx, d); err != nil {
			return nil, err
		}
		return s.checkObjectQuota(ctx, d) // an older template may ask more (admit_quota.go)
	}
	d, op, err := s.rollout(ctx, r.PathValue("ns"), r.PathValue("name"), action, to, allow)
	if err != nil {
		return err
	}
	switch action {
	case "pause":
		s.record(d, "RolloutPaused", "rollout paused")
	case "resume":
		s.record(d, "RolloutResumed", "rollout resumed")
	case "undo":
		s.record(d, "RolledBack", "rollout: "+op.Message)
	}
	writeAccepted(w, d, op)
	return nil
}

// rollout writes the action into the deployment, retrying when the controller writes in
// between (the write carries the resourceVersion it read). It returns the stored
// deployment and the operation in progress.
func (s *Server) rollout(ctx context.Context, ns, name, action string, to int, allow undoCheck) (*v4.Deployment, *v4.Operation, error) {
	unlock, err := s.lockQuota(ctx, ns) // an undo's quota check and its write (admit_quota.go)
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	var lost error
	for range 5 {
		obj, err := s.store.Get(ctx, v4.KindDeployment, ns, name)
		if err != nil {
			return nil, nil, err
		}
		d := obj.(*v4.Deployment)
		var op *v4.Operation
		var fence *store.QuotaFence // an undo's, when its namespace has a resource quota
		switch action {
		case "pause":
			d.Status.Paused = true
		case "resume":
			resume(d)
		case "undo":
			if op, fence, err = s.beginUndo(ctx, d, to, allow); err != nil {
				return nil, nil, err
			}
		}
		if err := s.hookAction(ctx, "rollout/"+action, opUpdate, d); err != nil { // admit_webhook.go
			if op != nil {
				_ = s.store.EndOperation(context.WithoutCancel(ctx), v4.KindDeployment, ns, name, v4.OpUndo)
			}
			return nil, nil, err
		}
		// The update keeps the definition as the user sent it; a conflict may be a quota
		// fence that moved, and the undo is checked again.
		err = s.update(store.WithQuotaFence(ctx, fence), d)
		if errors.Is(err, store.ErrConflict) {
			lost = err
			continue
		}
		if err != nil {
			if op != nil {
				_ = s.store.EndOperation(context.WithoutCancel(ctx), v4.KindDeployment, ns, name, v4.OpUndo)
			}
			return nil, nil, err
		}
		if op == nil {
			if op, err = s.store.Operation(ctx, v4.KindDeployment, ns, name); err != nil {
				return nil, nil, err
			}
		}
		return d, op, nil
	}
	if errors.Is(lost, store.ErrQuotaFence) {
		return nil, nil, fenceConflict(lost, 5)
	}
	return nil, nil, fmt.Errorf("%s the rollout of deployment %s/%s: %w", action, ns, name, store.ErrConflict)
}

// undoCheck judges a deployment with the template an undo restores, as a write of it
// would be, and returns the quota fence its write carries (nil: none).
type undoCheck func(*v4.Deployment) (*store.QuotaFence, error)

// resume clears a pause and a suspension; the step deadline counts from now.
func resume(d *v4.Deployment) {
	d.Status.Paused = false
	if d.Status.Phase == v4.DeploymentUpdateSuspend || d.Status.Phase == v4.DeploymentUpdatePaused {
		d.Status.Phase = v4.DeploymentUpdating
	}
	d.Status.LastStep = time.Now().UTC()
}

// beginUndo sets spec.template to revision to's (0: the one before the current) and
// begins the undo operation, which replaces a rollout in progress (BCS's cancel). allow
// judges the deployment with that template, as a write of it would be.
func (s *Server) beginUndo(ctx context.Context, d *v4.Deployment, to int, allow undoCheck) (*v4.Operation, *store.QuotaFence, error) {
	ns, name := d.Metadata.Namespace, d.Metadata.Name
	if d.Spec.Template == nil {
		return nil, nil, httpapi.Errorf(http.StatusBadRequest, "deployment %s/%s has no template to roll back", ns, name)
	}
	hist := d.Status.History
	if to == 0 {
		for _, h := range hist {
			if h.Revision < d.Status.Revision && h.Revision > to {
				to = h.Revision
			}
		}
		if to == 0 {
			return nil, nil, httpapi.Errorf(http.StatusBadRequest, "deployment %s/%s has no revision before %d to go back to", ns, name, d.Status.Revision).
				WithDetail("revision", "see `berth rollout history`")
		}
	}
	i := slices.IndexFunc(hist, func(h v4.DeploymentRevision) bool { return h.Revision == to })
	if i < 0 {
		return nil, nil, httpapi.Errorf(http.StatusBadRequest, "deployment %s/%s has no revision %d", ns, name, to).
			WithDetail("revision", fmt.Sprintf("kept revisions: %v", revisionsOf(hist)))
	}
	if hist[i].Hash == v4.TemplateHash(d.Spec.Template) {
		return nil, nil, httpapi.Errorf(http.StatusBadRequest, "deployment %s/%s already has the template of revision %d", ns, name, to).
			WithDetail("revision", "pick another revision")
	}
	op := &v4.Operation{Type: v4.OpUndo, Kind: v4.KindDeployment, Name: ns + "/" + name,
		Message: fmt.Sprintf("undo to the template of revision %d", to)}
	tmpl := hist[i].Template
	d.Spec.Template = &tmpl
	resume(d)
	if err := httpapi.Validate(d); err != nil { // a revision kept from an older berth may no longer pass
		return nil, nil, err
	}
	fence, err := allow(d)
	if err != nil {
		return nil, nil, err
	}
	if err := s.store.BeginOperation(ctx, ns, name, *op, v4.OpRollout, v4.OpUndo, v4.OpScale); err != nil {
		return nil, nil, err
	}
	return op, fence, nil
}

func revisionsOf(hist []v4.DeploymentRevision) []int {
	out := make([]int, len(hist))
	for i, h := range hist {
		out[i] = h.Revision
	}
	return out
}

// handleHistory serves GET .../deployments/{name}/history.
func (s *Server) handleHistory(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	obj, err := s.store.Get(ctx, v4.KindDeployment, r.PathValue("ns"), r.PathValue("name"))
	if err != nil {
		return err
	}
	d := obj.(*v4.Deployment)
	h := v4.DeploymentHistory{Kind: "DeploymentHistory", Current: d.Status.Revision, Items: d.Status.History}
	if h.Items == nil {
		h.Items = []v4.DeploymentRevision{}
	}
	body, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("encode the history of deployment %s/%s: %w", d.Metadata.Namespace, d.Metadata.Name, err)
	}
	// The revisions are stored definitions too: their credentials go out masked, as the
	// definition's (redact).
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(append(redact.Document(body), '\n'))
	return nil
}
