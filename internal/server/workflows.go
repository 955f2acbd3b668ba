package server

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/workflow/engine"
)

// The workflow routes (docs/workflows.md, "Running workflows"): a workflow's nodes page
// by page, whether kept in the object or offloaded, and the actions on a workflow.

var wflow = string(v4.KindWorkflow)

// Bounds of the nodes route.
const (
	wfNodesDefaultLimit = 500
	wfNodesMaxLimit     = 5000
	// maxResubmitParams bounds the parameter overrides of a resubmit.
	maxResubmitParams = 200
)

func (s *Server) workflowRoutes(mux *httpapi.Mux) {
	mux.Handle("GET /v1/namespaces/{ns}/workflows/{name}/nodes", on(acl.VerbRead, wflow), s.handleWorkflowNodes)
	mux.Handle("POST /v1/namespaces/{ns}/workflows/{name}/actions/{action}", on(acl.VerbWrite, wflow), s.handleWorkflowAction)
}

// wfNodesPage is the nodes route's answer.
type wfNodesPage struct {
	Items    []v4.WfNodeStatus `json:"items"`
	Continue string            `json:"continue,omitempty"`
}

func (s *Server) handleWorkflowNodes(w http.ResponseWriter, r *http.Request) error {
	limit, after, err := nodesQuery(r)
	if err != nil {
		return err
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	obj, err := s.store.Get(ctx, v4.KindWorkflow, r.PathValue("ns"), r.PathValue("name"))
	if err != nil {
		return err
	}
	wf := obj.(*v4.Workflow)
	page := wfNodesPage{Items: []v4.WfNodeStatus{}}
	if wf.Status.NodesOffloaded {
		items, next, err := s.store.WorkflowNodesPage(ctx, wf.Metadata.Namespace, wf.Metadata.Name, wf.Status.UID, after, limit)
		if err != nil {
			return err
		}
		page.Items, page.Continue = append(page.Items, items...), next
	} else {
		page = nodesPageOf(wf.Status.Nodes, after, limit)
	}
	httpapi.WriteJSON(w, http.StatusOK, page)
	return nil
}

// nodesQuery reads the nodes routes' limit and continue parameters.
func nodesQuery(r *http.Request) (limit int, after string, err error) {
	limit = wfNodesDefaultLimit
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > wfNodesMaxLimit {
			return 0, "", httpapi.Errorf(http.StatusBadRequest, "bad query parameter limit=%q", v).
				WithDetail("limit", fmt.Sprintf("a whole number from 1 to %d", wfNodesMaxLimit))
		}
		limit = n
	}
	after = r.URL.Query().Get("continue")
	if len(after) > 64 || strings.ContainsAny(after, "/\x00") {
		return 0, "", httpapi.Errorf(http.StatusBadRequest, "bad query parameter continue: not a token this route gave")
	}
	return limit, after, nil
}

// nodesPageOf is the page of nodes kept in an object: those after the ID after, in ID order.
func nodesPageOf(nodes map[string]v4.WfNodeStatus, after string, limit int) wfNodesPage {
	page := wfNodesPage{Items: []v4.WfNodeStatus{}}
	ids := slices.Sorted(maps.Keys(nodes))
	i, _ := slices.BinarySearch(ids, after)
	if i < len(ids) && ids[i] == after {
		i++
	}
	end := min(i+limit, len(ids))
	for _, id := range ids[i:end] {
		page.Items = append(page.Items, nodes[id])
	}
	if end < len(ids) && end > i {
		page.Continue = ids[end-1]
	}
	return page
}

// wfActionBody is the optional body of an action.
type wfActionBody struct {
	// Node is the Suspend node to resume (its name or ID); all when empty.
	Node string `json:"node,omitempty"`
	// Parameters override the workflow's arguments in a resubmit ("name=value").
	Parameters []string `json:"parameters,omitempty"`
}

// actionBody reads an action's optional body, its parameter overrides bounded.
func (s *Server) actionBody(w http.ResponseWriter, r *http.Request) (wfActionBody, error) {
	var body wfActionBody
	if r.ContentLength != 0 {
		if err := s.bodyReader.Decode(w, r, &body); err != nil {
			return body, err
		}
	}
	if len(body.Parameters) > maxResubmitParams {
		return body, httpapi.Errorf(http.StatusBadRequest, "parameters: %d, more than %d", len(body.Parameters), maxResubmitParams).
			WithDetail("parameters", fmt.Sprintf("at most %d", maxResubmitParams))
	}
	return body, nil
}

// actionDone records the action done on a workflow (an event "Workflow<Action>") and
// answers with the workflow it gave.
func (s *Server) actionDone(w http.ResponseWriter, out v4.Object, action, how string) {
	s.record(out, "Workflow"+strings.ToUpper(action[:1])+action[1:], how)
	httpapi.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) handleWorkflowAction(w http.ResponseWriter, r *http.Request) error {
	action := r.PathValue("action")
	body, err := s.actionBody(w, r)
	if err != nil {
		return err
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	ns, name := r.PathValue("ns"), r.PathValue("name")
	var out v4.Object
	switch action {
	case "suspend", "resume", "stop", "terminate":
		out, err = s.workflowSpecAction(ctx, ns, name, action, body.Node)
	case "retry":
		out, err = s.retryWorkflow(ctx, ns, name)
	case "resubmit":
		out, err = s.resubmitWorkflow(ctx, r, ns, name, body.Parameters)
	default:
		return httpapi.Errorf(http.StatusNotFound, "unknown workflow action %q (suspend, resume, stop, terminate, retry or resubmit)", action)
	}
	if err != nil {
		return err
	}
	s.actionDone(w, out, action, "asked to "+action)
	return nil
}

// workflowSpecAction writes what suspend, resume, stop and terminate ask into the
// workflow (its spec, or the resume annotation the controller acts on), retrying when
// the controller writes in between.
func (s *Server) workflowSpecAction(ctx context.Context, ns, name, action, node string) (*v4.Workflow, error) {
	if len(node) > 512 || strings.ContainsAny(node, ",\x00") {
		return nil, httpapi.Errorf(http.StatusBadRequest, "node: not a node name or ID").WithDetail("node", "a node's name or ID, without commas")
	}
	for range 5 {
		obj, err := s.store.Get(ctx, v4.KindWorkflow, ns, name)
		if err != nil {
			return nil, err
		}
		wf := obj.(*v4.Workflow)
		if v4.WfPhaseFinished(wf.Status.Phase) {
			return nil, httpapi.Errorf(http.StatusConflict, "workflow %s/%s is %s already", ns, name, wf.Status.Phase)
		}
		switch action {
		case "suspend":
			wf.Spec.Suspend = true
		case "resume":
			wf.Spec.Suspend = false
			wf.Metadata.Annotations = maps.Clone(wf.Metadata.Annotations)
			if wf.Metadata.Annotations == nil {
				wf.Metadata.Annotations = map[string]string{}
			}
			wf.Metadata.Annotations[controller.WorkflowResumeAnnotation] = cmpOr(node, "*")
		case "stop":
			if wf.Spec.Shutdown != v4.ShutdownTerminate {
				wf.Spec.Shutdown = v4.ShutdownStop
			}
		case "terminate":
			wf.Spec.Shutdown = v4.ShutdownTerminate
		}
		if err := s.hookAction(ctx, "actions/"+action, opUpdate, wf); err != nil { // admit_webhook.go
			return nil, err
		}
		err = s.store.Update(ctx, wf, store.Raw{})
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		return wf, err
	}
	return nil, httpapi.Errorf(http.StatusConflict, "workflow %s/%s: too many concurrent writes", ns, name)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// retryWorkflow runs a finished, failed workflow again from its failed steps: the
// succeeded ones are kept with their outputs (engine.RetryNodes).
func (s *Server) retryWorkflow(ctx context.Context, ns, name string) (*v4.Workflow, error) {
	for range 5 {
		obj, err := s.store.Get(ctx, v4.KindWorkflow, ns, name)
		if err != nil {
			return nil, err
		}
		wf := obj.(*v4.Workflow)
		st := &wf.Status
		if st.Phase != v4.WfFailed && st.Phase != v4.WfError {
			return nil, httpapi.Errorf(http.StatusConflict, "workflow %s/%s is %s: only a failed workflow is retried", ns, name, cmpOr(st.Phase, "new"))
		}
		// Before the nodes are rewritten: the hooks may refuse the retry (admit_webhook.go).
		if err := s.hookAction(ctx, "actions/retry", opUpdate, wf); err != nil {
			return nil, err
		}
		nodes := st.Nodes
		if st.NodesOffloaded {
			if nodes, err = s.store.WorkflowNodes(ctx, ns, name, st.UID); err != nil {
				return nil, err
			}
		}
		keep, removed := engine.RetryNodes(name, nodes)
		if st.NodesOffloaded {
			var changed []v4.WfNodeStatus
			for _, id := range slices.Sorted(maps.Keys(keep)) {
				if !sameNode(keep[id], nodes[id]) {
					changed = append(changed, keep[id])
				}
			}
			if err := s.store.DeleteWorkflowNodeIDs(ctx, ns, name, st.UID, removed); err != nil {
				return nil, err
			}
			if err := s.store.PutWorkflowNodes(ctx, ns, name, st.UID, changed); err != nil {
				return nil, err
			}
		} else {
			st.Nodes = keep
		}
		st.Phase, st.Message, st.FinishedAt = v4.WfRunning, "", time.Time{}
		st.RetryCount++
		wf.Spec.Shutdown = ""
		err = s.store.Update(ctx, wf, store.Raw{})
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		return wf, err
	}
	return nil, httpapi.Errorf(http.StatusConflict, "workflow %s/%s: too many concurrent writes", ns, name)
}

func sameNode(a, b v4.WfNodeStatus) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// resubmitWorkflow creates a new workflow from a workflow's spec, named
// "<name>-<5 random lowercase letters>", with parameter overrides; it passes the
// admission a create does.
func (s *Server) resubmitWorkflow(ctx context.Context, r *http.Request, ns, name string, params []string) (*v4.Workflow, error) {
	obj, err := s.store.Get(ctx, v4.KindWorkflow, ns, name)
	if err != nil {
		return nil, err
	}
	return s.resubmitFrom(ctx, r, obj.(*v4.Workflow), params)
}

// resubmitFrom creates the new workflow of a resubmit of old (stored or archived).
func (s *Server) resubmitFrom(ctx context.Context, r *http.Request, old *v4.Workflow, params []string) (*v4.Workflow, error) {
	ns, name := old.Metadata.Namespace, old.Metadata.Name
	spec := old.Spec
	var err error
	spec.Suspend, spec.Shutdown = false, ""
	if spec.Arguments, err = overrideParams(spec.Arguments, params); err != nil {
		return nil, err
	}
	base := name
	if len(base) > 57 {
		base = base[:57]
	}
	nw := v4.Workflow{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindWorkflow},
		Metadata: v4.ObjectMeta{Name: base + "-" + randomLower(5), Namespace: ns, Labels: old.Metadata.Labels},
		Spec:     spec}
	return s.createWorkflow(ctx, r, nw, "the resubmitted workflow", nil)
}

// createWorkflow creates wf through the admission a create passes (what names it in
// errors); prepare, when set, is given the admitted workflow before it is written.
func (s *Server) createWorkflow(ctx context.Context, r *http.Request, wf v4.Workflow, what string, prepare func(*v4.Workflow) error) (*v4.Workflow, error) {
	raw, err := json.Marshal(wf)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", what, err)
	}
	docs, err := v4.Parse(raw)
	if err != nil {
		return nil, httpapi.Errorf(http.StatusBadRequest, "%s: %v", what, err)
	}
	a := s.newAdmission(r, opCreate, docs)
	defer a.done()
	if err := a.admit(ctx, targetOf(docs[0].Object)); err != nil {
		return nil, err
	}
	out := docs[0].Object.(*v4.Workflow)
	if prepare != nil {
		if err := prepare(out); err != nil {
			return nil, err
		}
	}
	create := func(ctx context.Context) error { return s.store.Create(ctx, out, rawOf(docs[0])) }
	if err := a.fencedWrite(ctx, create); err != nil {
		return nil, err
	}
	return out, nil
}

// overrideParams sets the values of the workflow's argument parameters "name=value"
// names; a name it does not declare is refused.
func overrideParams(args *v4.WfArguments, params []string) (*v4.WfArguments, error) {
	if len(params) == 0 {
		return args, nil
	}
	if args == nil {
		return nil, httpapi.Errorf(http.StatusBadRequest, "parameters: the workflow declares no arguments")
	}
	out := *args
	out.Parameters = slices.Clone(args.Parameters)
	for i, p := range params {
		k, v, ok := strings.Cut(p, "=")
		j := slices.IndexFunc(out.Parameters, func(q v4.WfParameter) bool { return q.Name == k })
		if !ok || j < 0 {
			return nil, httpapi.Errorf(http.StatusBadRequest, "parameters[%d]: %q is not name=value of one of the workflow's arguments", i, truncateParam(p)).
				WithDetail(fmt.Sprintf("parameters[%d]", i), "name=value of one of the workflow's arguments")
		}
		out.Parameters[j].Value = &v
	}
	return &out, nil
}

func truncateParam(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// randomLower is n random lowercase letters.
func randomLower(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = 'a' + b[i]%26
	}
	return string(b)
}
