package client

import (
	"bytes"
	"context"
	"net/http"
	"net/url"

	v4 "github.com/berthhq/berth/api/v4"
)

// Apply creates or updates every document of body (a JSON or YAML stream) in one
// transaction. On bad input nothing is written and the error is an *APIError (422) whose
// Details name every problem, prefixed "documents[i]." when body holds several documents.
func (c *Client) Apply(ctx context.Context, body []byte) ([]v4.ApplyResult, error) {
	return c.ApplyValidated(ctx, body, v4.ValidateWarn)
}

// ApplyValidated is Apply with the server reading the documents in mode (?validate=,
// docs/api.md): ValidateStrict refuses what the default accepts with a warning.
func (c *Client) ApplyValidated(ctx context.Context, body []byte, mode v4.Validation) ([]v4.ApplyResult, error) {
	var out struct {
		Results []v4.ApplyResult `json:"results"`
	}
	r := request{method: http.MethodPost, path: "/v1/apply", query: validateQuery(mode), body: body, contentType: contentTypeOf(body)}
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

// validateQuery is the ?validate= of a document write: none for the server's default.
func validateQuery(mode v4.Validation) url.Values {
	if mode == v4.ValidateWarn {
		return nil
	}
	return url.Values{"validate": {mode.String()}}
}
