package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
)

// The workflow routes beside the object's own (docs/workflows.md): its nodes a page at a
// time, whether kept in the object or outside it; its actions; its stored artifacts.

// WorkflowNodePageMax is the server's largest page of nodes.
const WorkflowNodePageMax = 5000

// MaxWorkflowNodePages bounds the pages AllWorkflowNodes reads: a server that always
// answers a continue token must not keep a client reading for ever.
const MaxWorkflowNodePages = 1000

// WorkflowNodePage is one page of a workflow's nodes.
type WorkflowNodePage struct {
	Items    []v4.WfNodeStatus `json:"items"`
	Continue string            `json:"continue,omitempty"`
}

// WorkflowNodes reads one page of up to limit nodes (0: the server's default) of
// workflow ns/name, from the token of the page before ("" for the first).
func (c *Client) WorkflowNodes(ctx context.Context, ns, name string, limit int, cont string) (*WorkflowNodePage, error) {
	path, err := objectPath(v4.KindWorkflow, ns, name, "nodes")
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cont != "" {
		q.Set("continue", cont)
	}
	var page WorkflowNodePage
	if err := c.doJSON(ctx, request{method: http.MethodGet, path: path, query: q}, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// AllWorkflowNodes reads every node of workflow ns/name, a page of limit at a time.
func (c *Client) AllWorkflowNodes(ctx context.Context, ns, name string, limit int) ([]v4.WfNodeStatus, error) {
	var out []v4.WfNodeStatus
	cont := ""
	for range MaxWorkflowNodePages {
		page, err := c.WorkflowNodes(ctx, ns, name, limit, cont)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if page.Continue == "" || page.Continue == cont {
			return out, nil
		}
		cont = page.Continue
	}
	return nil, fmt.Errorf("workflow %s/%s: more than %d pages of nodes", ns, name, MaxWorkflowNodePages)
}

// WorkflowActionRequest is the optional body of a workflow action: Node names the
// Suspend node a resume resumes; Parameters ("k=v") override a resubmit's arguments.
type WorkflowActionRequest struct {
	Node       string   `json:"node,omitempty"`
	Parameters []string `json:"parameters,omitempty"`
}

// WorkflowAction runs action (suspend, resume, stop, terminate, retry, resubmit) on
// workflow ns/name and returns the workflow it answers: the updated one, or for resubmit
// the new one.
func (c *Client) WorkflowAction(ctx context.Context, ns, name, action string, req WorkflowActionRequest) (*v4.Workflow, error) {
	path, err := objectPath(v4.KindWorkflow, ns, name, "actions/"+url.PathEscape(action))
	if err != nil {
		return nil, err
	}
	var body []byte
	if req.Node != "" || len(req.Parameters) > 0 {
		if body, err = json.Marshal(req); err != nil {
			return nil, fmt.Errorf("encode the %s request: %w", action, err)
		}
	}
	return c.workflowCall(ctx, request{method: http.MethodPost, path: path, body: body}, action+" "+name)
}

// workflowCall sends r and decodes the workflow it answers; what names the call in the
// error of an answer of another kind.
func (c *Client) workflowCall(ctx context.Context, r request, what string) (*v4.Workflow, error) {
	obj, err := c.objectCall(ctx, r, v4.KindWorkflow)
	if err != nil {
		return nil, err
	}
	wf, ok := obj.(*v4.Workflow)
	if !ok {
		return nil, fmt.Errorf("%s: the answer is a %s, not a workflow", what, obj.GetKind())
	}
	return wf, nil
}

// WorkflowArtifact streams the stored bytes of artifact (v4 "main-logs": the step's log)
// of node nodeID of workflow ns/name. The caller closes the reader.
func (c *Client) WorkflowArtifact(ctx context.Context, ns, name, nodeID, artifact string) (io.ReadCloser, error) {
	path, err := objectPath(v4.KindWorkflow, ns, name, "artifacts/"+url.PathEscape(nodeID)+"/"+url.PathEscape(artifact))
	if err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, request{method: http.MethodGet, path: path})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
