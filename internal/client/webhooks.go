package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	v4 "github.com/berthhq/berth/api/v4"
)

// AdmissionWebhooks lists the admission webhook configurations.
func (c *Client) AdmissionWebhooks(ctx context.Context) ([]v4.AdmissionWebhook, error) {
	var out v4.AdmissionWebhookList
	return out.Items, c.doJSON(ctx, request{method: http.MethodGet, path: "/v1/admissionwebhooks"}, &out)
}

// AdmissionWebhook reads one configuration.
func (c *Client) AdmissionWebhook(ctx context.Context, name string) (*v4.AdmissionWebhook, error) {
	var out v4.AdmissionWebhook
	return &out, c.doJSON(ctx, request{method: http.MethodGet, path: "/v1/admissionwebhooks/" + url.PathEscape(name)}, &out)
}

// PutAdmissionWebhook creates or replaces the configuration doc (JSON) names.
func (c *Client) PutAdmissionWebhook(ctx context.Context, name string, doc []byte) (*v4.AdmissionWebhook, error) {
	var out v4.AdmissionWebhook
	return &out, c.doJSON(ctx, request{method: http.MethodPut, path: "/v1/admissionwebhooks/" + url.PathEscape(name), body: doc}, &out)
}

// DeleteAdmissionWebhook deletes a configuration.
func (c *Client) DeleteAdmissionWebhook(ctx context.Context, name string) error {
	return c.doNoAnswer(ctx, request{method: http.MethodDelete, path: "/v1/admissionwebhooks/" + url.PathEscape(name)})
}

// CreateCertificateRequest sends a signing request to the cluster CA.
func (c *Client) CreateCertificateRequest(ctx context.Context, req v4.CertificateRequest) (*v4.CertificateRequest, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var out v4.CertificateRequest
	return &out, c.doJSON(ctx, request{method: http.MethodPost, path: "/v1/certificaterequests", body: body}, &out)
}

// CertificateRequest reads a signing request (with its certificate once approved).
func (c *Client) CertificateRequest(ctx context.Context, name string) (*v4.CertificateRequest, error) {
	var out v4.CertificateRequest
	return &out, c.doJSON(ctx, request{method: http.MethodGet, path: "/v1/certificaterequests/" + url.PathEscape(name)}, &out)
}

// CertificateRequests lists the signing requests.
func (c *Client) CertificateRequests(ctx context.Context) ([]v4.CertificateRequest, error) {
	var out v4.CertificateRequestList
	return out.Items, c.doJSON(ctx, request{method: http.MethodGet, path: "/v1/certificaterequests"}, &out)
}

// DecideCertificateRequest approves (signs) or denies a pending request.
func (c *Client) DecideCertificateRequest(ctx context.Context, name string, approve bool) (*v4.CertificateRequest, error) {
	action := "deny"
	if approve {
		action = "approve"
	}
	var out v4.CertificateRequest
	return &out, c.doJSON(ctx, request{method: http.MethodPost, path: "/v1/certificaterequests/" + url.PathEscape(name) + "/" + action}, &out)
}
