package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"

	v4 "github.com/berthhq/berth/api/v4"
)

// agentArtifactsPath is the server's route for a step's artifacts, for the agent of the
// node its task group is placed on (docs/workflows.md, "Inputs and outputs").
const agentArtifactsPath = "/v1/agent/artifacts"

// AgentGetArtifact streams the stored bytes of input artifact input of task group
// ns/taskGroup's spec.step; the server takes the key from the spec. A 404 wraps
// fs.ErrNotExist. The caller closes the reader.
func (c *Client) AgentGetArtifact(ctx context.Context, ns, taskGroup, input string) (io.ReadCloser, error) {
	q := url.Values{"namespace": {ns}, "taskgroup": {taskGroup}, "input": {input}}
	resp, err := c.do(ctx, request{method: http.MethodGet, path: agentArtifactsPath, query: q})
	if err != nil {
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
			return nil, fmt.Errorf("%w: %w", fs.ErrNotExist, err)
		}
		return nil, err
	}
	return resp.Body, nil
}

// AgentPutArtifact stores body (size bytes; read from its start again when the call
// fails over to another server) as artifact name of task group ns/taskGroup's
// spec.step: an output artifact, or stepio.LogsArtifact for the main task's log. It
// streams the body and returns what the server stored.
func (c *Client) AgentPutArtifact(ctx context.Context, ns, taskGroup, name string, body io.ReadSeeker, size int64) (v4.StoredArtifact, error) {
	var out v4.StoredArtifact
	q := url.Values{"namespace": {ns}, "taskgroup": {taskGroup}, "artifact": {name}}
	resp, err := c.roundTrip(ctx, http.MethodPut, agentArtifactsPath, func(base *url.URL) (*http.Request, error) {
		if _, err := body.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		u := *base
		u.Path = base.Path + agentArtifactsPath
		u.RawQuery = q.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, u.String(), io.NopCloser(io.LimitReader(body, size)))
		if err != nil {
			return nil, err
		}
		req.ContentLength = size
		req.Header.Set("Content-Type", "application/octet-stream")
		req.Header.Set("Accept", "application/json")
		return req, nil
	})
	if err != nil {
		return out, err
	}
	defer discardBody(resp)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return out, decodeError(resp)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return out, fmt.Errorf("PUT %s: decode answer: %w", agentArtifactsPath, err)
	}
	return out, nil
}
