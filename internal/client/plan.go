package client

import (
	"context"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
)

// PlanResult is the answer of POST /v1/plan (docs/api.md, Plan).
type PlanResult = v4.PlanResult

// Plan asks where the instances of the body's applications, processes, deployments and
// daemonsets would be placed; nothing is written. The body is a document stream as for
// Apply. A 503 means the server's scheduler has not read the cluster yet.
func (c *Client) Plan(ctx context.Context, body []byte) (*PlanResult, error) {
	return c.PlanValidated(ctx, body, v4.ValidateWarn)
}

// PlanValidated is Plan with the server reading the documents in mode (as
// ApplyValidated).
func (c *Client) PlanValidated(ctx context.Context, body []byte, mode v4.Validation) (*PlanResult, error) {
	var out PlanResult
	r := request{method: http.MethodPost, path: "/v1/plan", query: validateQuery(mode), body: body, contentType: contentTypeOf(body)}
	if err := c.doJSON(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
