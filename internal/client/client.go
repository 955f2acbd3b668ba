// Package client is a typed Go client of the berth REST API (docs/api.md).
//
// Every call takes a context: deadlines and cancellation come from it, never from a
// client-wide timeout, so long-running watches and short reads share one Client.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// DefaultServer is the address clients use when nothing else names one.
const DefaultServer = "http://127.0.0.1:7470"

// Client talks to one berth server. It is safe for concurrent use.
type Client struct {
	base      *url.URL
	http      *http.Client
	userAgent string
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient replaces the underlying *http.Client (for TLS settings or tests).
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.http = hc }
}

// WithUserAgent sets the User-Agent header of every request.
func WithUserAgent(ua string) Option {
	return func(c *Client) { c.userAgent = ua }
}

// New returns a client of the server at baseURL ("http://host:port"; a bare "host:port"
// is taken as http).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := ParseServerURL(baseURL)
	if err != nil {
		return nil, err
	}
	c := &Client{base: u, http: http.DefaultClient, userAgent: "berth-client"}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// ParseServerURL normalises a server address: it adds "http://" when the scheme is
// missing, requires a host, and drops a trailing slash.
func ParseServerURL(s string) (*url.URL, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("empty server address")
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("invalid server address %q: %w", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("invalid server address %q: scheme must be http or https", s)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("invalid server address %q: no host", s)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	return u, nil
}

// Server returns the base URL the client talks to.
func (c *Client) Server() string { return c.base.String() }

// objectPath builds /v1/namespaces/{ns}/{plural}[/{name}[/{sub}]], or /v1/{plural} when
// ns is empty (every namespace). Cluster-scoped kinds (nodes) ignore ns:
// /v1/{plural}[/{name}[/{sub}]].
func objectPath(kind v4.Kind, ns, name, sub string) (string, error) {
	if !kind.Valid() {
		return "", fmt.Errorf("unknown kind %q", kind)
	}
	if !kind.Namespaced() {
		p := "/v1/" + kind.Plural()
		if name != "" {
			p += "/" + url.PathEscape(name)
			if sub != "" {
				p += "/" + sub
			}
		}
		return p, nil
	}
	if ns == "" {
		if name != "" {
			return "", fmt.Errorf("%s %q: a namespace is required", kind, name)
		}
		return "/v1/" + kind.Plural(), nil
	}
	p := "/v1/namespaces/" + url.PathEscape(ns) + "/" + kind.Plural()
	if name != "" {
		p += "/" + url.PathEscape(name)
		if sub != "" {
			p += "/" + sub
		}
	}
	return p, nil
}

// request is one HTTP call to the server.
type request struct {
	method      string
	path        string
	query       url.Values
	body        []byte
	contentType string
}

// do sends r and returns the response when its status is 2xx; otherwise it decodes the
// error body into an *APIError. The caller closes the body.
func (c *Client) do(ctx context.Context, r request) (*http.Response, error) {
	u := *c.base
	u.Path = c.base.Path + r.path
	u.RawQuery = r.query.Encode()
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	if r.body != nil {
		ct := r.contentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.transportError(r.method, r.path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, decodeError(resp)
	}
	return resp, nil
}

// doJSON sends r and decodes a 2xx JSON answer into out.
func (c *Client) doJSON(ctx context.Context, r request, out any) error {
	resp, err := c.do(ctx, r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", r.method, r.path, err)
	}
	return nil
}

// decodeObject turns one JSON object into the typed value of its kind. want, when set, is
// the kind the caller asked for, used when the body does not say.
func decodeObject(data []byte, want v4.Kind) (v4.Object, error) {
	var tm v4.TypeMeta
	if err := json.Unmarshal(data, &tm); err != nil {
		return nil, fmt.Errorf("decode object: %w", err)
	}
	kind := tm.Kind
	if kind == "" {
		kind = want
	}
	obj, err := v4.New(kind)
	if err != nil {
		return nil, fmt.Errorf("decode object: %w", err)
	}
	if err := json.Unmarshal(data, obj); err != nil {
		return nil, fmt.Errorf("decode %s: %w", kind, err)
	}
	return obj, nil
}
