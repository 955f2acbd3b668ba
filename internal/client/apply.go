package client

import (
	"bytes"
	"context"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
)

// Apply creates or updates every document of body (a JSON or YAML stream) in one
// transaction. On bad input nothing is written and the error is an *APIError (422) whose
// Details name every problem, prefixed "documents[i]." when body holds several documents.
func (c *Client) Apply(ctx context.Context, body []byte) ([]v4.ApplyResult, error) {
	var out struct {
		Results []v4.ApplyResult `json:"results"`
	}
	r := request{method: http.MethodPost, path: "/v1/apply", body: body, contentType: contentTypeOf(body)}
	if err := c.doJSON(ctx, r, &out); err != nil {
		return nil, err
	}
	return out.Results, nil
}

// contentTypeOf guesses the media type of a document stream: JSON when it starts with
// '{' or '['. The server sniffs the body anyway; the header is for proxies and logs.
func contentTypeOf(body []byte) string {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return "application/json"
	}
	return "application/yaml"
}
