package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
)

// The workflow archive's routes (docs/workflows.md, "The workflow archive"): finished
// workflows moved out of the objects, listed a page at a time, read whole, deleted,
// resubmitted or retried. Several workflows of one name may be archived, told apart by
// their status.uid; a call without a UID means the one archived last.

// archivedPath is the path of namespace ns's archive, of its entry name, or of a route
// below that entry, with the query choosing the entry of uid ("": the one archived last).
func archivedPath(ns, name, sub, uid string) (string, url.Values) {
	p := "/v1/namespaces/" + url.PathEscape(nsOrDefault(ns)) + "/archivedworkflows"
	if name != "" {
		p += "/" + url.PathEscape(name)
		if sub != "" {
			p += "/" + sub
		}
	}
	q := url.Values{}
	if uid != "" {
		q.Set("uid", uid)
	}
	return p, q
}

// ArchivedWorkflows reads one page of up to limit entries (0: the server's default) of
// namespace ns's archive, from the token of the page before ("" for the first).
func (c *Client) ArchivedWorkflows(ctx context.Context, ns string, limit int, cont string) (*v4.ArchivedWorkflowList, error) {
	path, q := archivedPath(ns, "", "", "")
	if limit > 0 {
		q.Set("limit", strconv.Itoa(min(limit, v4.ArchivedWorkflowListMax)))
	}
	if cont != "" {
		q.Set("continue", cont)
	}
	var page v4.ArchivedWorkflowList
	if err := c.doJSON(ctx, request{method: http.MethodGet, path: path, query: q}, &page); err != nil {
		return nil, err
	}
	for i := range page.Items {
		if page.Items[i].Workflow == nil {
			return nil, fmt.Errorf("archived workflows of %s: entry %d has no workflow", ns, i)
		}
	}
	return &page, nil
}

// GetArchivedWorkflow reads archived workflow ns/name whole (uid "": the one archived last).
func (c *Client) GetArchivedWorkflow(ctx context.Context, ns, name, uid string) (*v4.ArchivedWorkflow, error) {
	path, q := archivedPath(ns, name, "", uid)
	return c.archivedCall(ctx, request{method: http.MethodGet, path: path, query: q}, name)
}

// DeleteArchivedWorkflow deletes archived workflow ns/name (uid "": the one archived
// last) and returns the entry deleted.
func (c *Client) DeleteArchivedWorkflow(ctx context.Context, ns, name, uid string) (*v4.ArchivedWorkflow, error) {
	path, q := archivedPath(ns, name, "", uid)
	return c.archivedCall(ctx, request{method: http.MethodDelete, path: path, query: q}, name)
}

func (c *Client) archivedCall(ctx context.Context, r request, name string) (*v4.ArchivedWorkflow, error) {
	var e v4.ArchivedWorkflow
	if err := c.doJSON(ctx, r, &e); err != nil {
		return nil, err
	}
	if e.Workflow == nil {
		return nil, fmt.Errorf("archived workflow %s: the answer has no workflow", name)
	}
	return &e, nil
}

// ArchivedWorkflowAction runs action (resubmit or retry) on archived workflow ns/name
// (uid "": the one archived last) and returns the stored workflow it made: for resubmit
// a new one (req.Parameters override its arguments), for retry the archived one stored
// again under its name and running from its failed steps.
func (c *Client) ArchivedWorkflowAction(ctx context.Context, ns, name, uid, action string, req WorkflowActionRequest) (*v4.Workflow, error) {
	path, q := archivedPath(ns, name, "actions/"+url.PathEscape(action), uid)
	var body []byte
	if len(req.Parameters) > 0 {
		var err error
		if body, err = json.Marshal(WorkflowActionRequest{Parameters: req.Parameters}); err != nil {
			return nil, fmt.Errorf("encode the %s request: %w", action, err)
		}
	}
	return c.workflowCall(ctx, request{method: http.MethodPost, path: path, query: q, body: body}, action+" archived "+name)
}
