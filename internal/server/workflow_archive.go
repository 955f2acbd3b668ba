package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// The workflow archive's routes (docs/workflows.md, "The workflow archive"): archived
// workflows listed, read (whole, or their nodes page by page), deleted, resubmitted and
// retried. They take the rights on workflows: an archived workflow is still one of its
// namespace's workflows.

// wfArchiveDefaultLimit is the list route's page without ?limit (at most
// v4.ArchivedWorkflowListMax).
const wfArchiveDefaultLimit = 100

func (s *Server) workflowArchiveRoutes(mux *httpapi.Mux) {
	base := "/v1/namespaces/{ns}/archivedworkflows"
	mux.Handle("GET "+base, on(acl.VerbRead, wflow), s.handleListArchived)
	mux.Handle("GET "+base+"/{name}", on(acl.VerbRead, wflow), s.handleGetArchived)
	mux.Handle("GET "+base+"/{name}/nodes", on(acl.VerbRead, wflow), s.handleArchivedNodes)
	mux.Handle("DELETE "+base+"/{name}", on(acl.VerbWrite, wflow), s.handleDeleteArchived)
	mux.Handle("POST "+base+"/{name}/actions/{action}", on(acl.VerbWrite, wflow), s.handleArchivedAction)
}

func (s *Server) handleListArchived(w http.ResponseWriter, r *http.Request) error {
	limit := wfArchiveDefaultLimit
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > v4.ArchivedWorkflowListMax {
			return httpapi.Errorf(http.StatusBadRequest, "bad query parameter limit=%q", v).
				WithDetail("limit", fmt.Sprintf("a whole number from 1 to %d", v4.ArchivedWorkflowListMax))
		}
		limit = n
	}
	after := r.URL.Query().Get("continue")
	if len(after) > 512 || strings.Count(after, "/") > 1 || strings.ContainsRune(after, 0) {
		return httpapi.Errorf(http.StatusBadRequest, "bad query parameter continue: not a token this route gave")
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	entries, next, err := s.store.ListArchived(ctx, r.PathValue("ns"), after, limit)
	if err != nil {
		return err
	}
	out := v4.ArchivedWorkflowList{Items: make([]v4.ArchivedWorkflow, 0, len(entries)), Continue: next}
	for _, e := range entries {
		wf := *e.Workflow
		wf.Spec = v4.WorkflowSpec{}
		wf.Status.Nodes = nil
		out.Items = append(out.Items, v4.ArchivedWorkflow{ArchivedAt: e.ArchivedAt, ExpiresAt: e.ExpiresAt, Workflow: &wf})
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

// archivedOf reads the archived workflow the route names: ?uid= picks one of that name,
// else the one archived last.
func (s *Server) archivedOf(ctx context.Context, r *http.Request) (*v4.ArchivedWorkflow, error) {
	uid := r.URL.Query().Get("uid")
	if len(uid) > 64 || strings.ContainsAny(uid, "/\x00") {
		return nil, httpapi.Errorf(http.StatusBadRequest, "bad query parameter uid: not a workflow's status.uid").WithDetail("uid", "a workflow's status.uid")
	}
	e, err := s.store.GetArchived(ctx, r.PathValue("ns"), r.PathValue("name"), uid)
	if errors.Is(err, store.ErrNotFound) {
		return nil, httpapi.Errorf(http.StatusNotFound, "archived workflow %s/%s not found", r.PathValue("ns"), r.PathValue("name"))
	}
	return e, err
}

// artifactsUID is the status.uid whose artifacts the workflow's artifact route reads:
// the stored workflow's, or, when none of that name is stored or ?uid= names another, the
// archived one's (its artifacts are kept as long as it is: docs/workflows.md, "The
// workflow archive"), so that an archived workflow's steps' logs read as a stored one's.
func (s *Server) artifactsUID(ctx context.Context, r *http.Request) (string, error) {
	ns, name, uid := r.PathValue("ns"), r.PathValue("name"), r.URL.Query().Get("uid")
	wf, err := store.Typed[*v4.Workflow](s.store, v4.KindWorkflow).Get(ctx, ns, name)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	if err == nil && (uid == "" || uid == wf.Status.UID) {
		if wf.Status.UID == "" {
			return "", httpapi.Errorf(http.StatusNotFound, "workflow %s/%s has not started: it has no artifacts yet", ns, name)
		}
		return wf.Status.UID, nil
	}
	e, err := s.archivedOf(ctx, r)
	var he *httpapi.Error
	if errors.As(err, &he) && he.Code == http.StatusNotFound {
		return "", httpapi.Errorf(http.StatusNotFound, "workflow %s/%s not found, stored or archived", ns, name)
	}
	if err != nil {
		return "", err
	}
	return e.Workflow.Status.UID, nil
}

func (s *Server) handleGetArchived(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	e, err := s.archivedOf(ctx, r)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, e)
	return nil
}

func (s *Server) handleArchivedNodes(w http.ResponseWriter, r *http.Request) error {
	limit, after, err := nodesQuery(r)
	if err != nil {
		return err
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	e, err := s.archivedOf(ctx, r)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, nodesPageOf(e.Workflow.Status.Nodes, after, limit))
	return nil
}

func (s *Server) handleDeleteArchived(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	e, err := s.archivedOf(ctx, r)
	if err != nil {
		return err
	}
	if err := s.hookAction(ctx, "archive/delete", opDelete, e.Workflow); err != nil { // admit_webhook.go
		return err
	}
	m := e.Workflow.Metadata
	if err := s.store.DeleteArchived(ctx, m.Namespace, m.Name, e.Workflow.Status.UID); err != nil {
		return err
	}
	s.record(e.Workflow, "ArchiveDeleted", "deleted from the workflow archive")
	httpapi.WriteJSON(w, http.StatusOK, e)
	return nil
}

// handleArchivedAction resubmits an archived workflow (a new workflow from its spec, the
// archived one kept) or retries it: it becomes a stored workflow again, with its nodes,
// and runs again from its failed steps (retryWorkflow).
func (s *Server) handleArchivedAction(w http.ResponseWriter, r *http.Request) error {
	action := r.PathValue("action")
	body, err := s.actionBody(w, r)
	if err != nil {
		return err
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	e, err := s.archivedOf(ctx, r)
	if err != nil {
		return err
	}
	var out *v4.Workflow
	switch action {
	case "resubmit":
		out, err = s.resubmitFrom(ctx, r, e.Workflow, body.Parameters)
	case "retry":
		out, err = s.retryArchived(ctx, r, e)
	default:
		return httpapi.Errorf(http.StatusNotFound, "unknown action %q on an archived workflow (resubmit or retry)", action)
	}
	if err != nil {
		return err
	}
	s.actionDone(w, out, action, "asked to "+action+" from the workflow archive")
	return nil
}

// retryArchived stores a failed archived workflow again under its name (refused while
// one of that name is stored), takes it out of the archive, and retries it.
func (s *Server) retryArchived(ctx context.Context, r *http.Request, e *v4.ArchivedWorkflow) (*v4.Workflow, error) {
	old := e.Workflow
	ns, name, uid := old.Metadata.Namespace, old.Metadata.Name, old.Status.UID
	if p := old.Status.Phase; p != v4.WfFailed && p != v4.WfError {
		return nil, httpapi.Errorf(http.StatusConflict, "archived workflow %s/%s is %s: only a failed workflow is retried", ns, name, p)
	}
	wf := v4.Workflow{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindWorkflow},
		Metadata: v4.ObjectMeta{Name: name, Namespace: ns, Labels: old.Metadata.Labels, Annotations: old.Metadata.Annotations},
		Spec:     old.Spec}
	restore := func(restored *v4.Workflow) error {
		st := old.Status
		if nodesBytes(st.Nodes) > controller.WorkflowInlineBytes {
			// Its nodes go back to keys of their own, as the controller had them.
			if err := s.store.PutWorkflowNodes(ctx, ns, name, uid, slices.Collect(maps.Values(st.Nodes))); err != nil {
				return err
			}
			st.Nodes, st.NodesOffloaded = nil, true
		}
		restored.Status = st
		return nil
	}
	_, err := s.createWorkflow(ctx, r, wf, "the restored workflow", restore)
	if errors.Is(err, store.ErrAlreadyExists) {
		return nil, httpapi.Errorf(http.StatusConflict, "workflow %s/%s is stored: delete it, or resubmit the archived one", ns, name)
	}
	if err != nil {
		return nil, err
	}
	if err := s.store.DeleteArchived(ctx, ns, name, uid); err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	return s.retryWorkflow(ctx, ns, name)
}

func nodesBytes(nodes map[string]v4.WfNodeStatus) int {
	b, err := json.Marshal(nodes)
	if err != nil {
		return 0
	}
	return len(b)
}
