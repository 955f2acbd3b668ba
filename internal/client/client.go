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
	"strconv"
	"strings"
	"sync/atomic"

	v4 "github.com/berthhq/berth/api/v4"
)

// DefaultServer is the address clients use when nothing else names one.
const DefaultServer = "https://127.0.0.1:7470"

// Client talks to one berth server, or to the first that answers of several (failover.go).
// It is safe for concurrent use.
type Client struct {
	bases     []*url.URL
	cur       atomic.Int32 // index in bases of the server that answered last
	http      *http.Client
	userAgent string
	onWarning func(string) // WithWarningHandler
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient replaces the underlying *http.Client (for TLS settings or tests).
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.http = hc }
}

// WithWarningHandler has f called with the text of each Warning header of an answer
// (what the server accepted and the user should know, such as a key it ignores).
func WithWarningHandler(f func(text string)) Option {
	return func(c *Client) { c.onWarning = f }
}

// WithUserAgent sets the User-Agent header of every request.
func WithUserAgent(ua string) Option {
	return func(c *Client) { c.userAgent = ua }
}

// New returns a client of the server at baseURL ("https://host:port"; a bare "host:port"
// is taken as https). baseURL may list several servers, comma separated: the client then
// fails over from one to the next (see failover.go).
func New(baseURL string, opts ...Option) (*Client, error) {
	var bases []*url.URL
	for _, part := range strings.Split(baseURL, ",") {
		u, err := ParseServerURL(part)
		if err != nil {
			return nil, err
		}
		bases = append(bases, u)
	}
	c := &Client{bases: bases, http: http.DefaultClient, userAgent: "berth-client"}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// ParseServerURL normalises a server address: it adds "https://" when the scheme is
// missing, requires a host, and drops a trailing slash.
func ParseServerURL(s string) (*url.URL, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("empty server address")
	}
	if !strings.Contains(s, "://") {
		s = "https://" + s
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

// Server returns the base URL the client talks to now (the one that answered last).
func (c *Client) Server() string { return c.current().String() }

// Servers returns every server the client may talk to, in failover order.
func (c *Client) Servers() []string {
	out := make([]string, len(c.bases))
	for i, b := range c.bases {
		out[i] = b.String()
	}
	return out
}

func (c *Client) current() *url.URL { return c.bases[c.cur.Load()] }

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
	resp, err := c.roundTrip(ctx, r.method, r.path, func(base *url.URL) (*http.Request, error) {
		u := *base
		u.Path = base.Path + r.path
		u.RawQuery = r.query.Encode()
		var body io.Reader
		if r.body != nil {
			body = bytes.NewReader(r.body)
		}
		req, err := http.NewRequestWithContext(ctx, r.method, u.String(), body)
		if err != nil {
			return nil, err
		}
		if r.body != nil {
			ct := r.contentType
			if ct == "" {
				ct = "application/json"
			}
			req.Header.Set("Content-Type", ct)
		}
		req.Header.Set("Accept", "application/json")
		return req, nil
	})
	if err != nil {
		return nil, err
	}
	if c.onWarning != nil {
		for _, v := range resp.Header.Values("Warning") {
			c.onWarning(warningText(v))
		}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer discardBody(resp)
		return nil, decodeError(resp)
	}
	return resp, nil
}

// warningText reads the text of a Warning header value, `299 AGENT "TEXT"`; a value of
// another shape is given whole.
func warningText(v string) string {
	if i := strings.IndexByte(v, '"'); i >= 0 {
		if text, err := strconv.Unquote(v[i:]); err == nil {
			return text
		}
	}
	return v
}

// doJSON sends r and decodes a 2xx JSON answer into out.
func (c *Client) doJSON(ctx context.Context, r request, out any) error {
	resp, err := c.do(ctx, r)
	if err != nil {
		return err
	}
	defer discardBody(resp) // the decoder may stop before the body's end
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", r.method, r.path, err)
	}
	return nil
}

// doNoAnswer makes the call r and reads nothing of the answer but its status: the calls
// whose success is all they answer.
func (c *Client) doNoAnswer(ctx context.Context, r request) error {
	resp, err := c.do(ctx, r)
	if err != nil {
		return err
	}
	discardBody(resp)
	return nil
}

// doNoAnswerJSON is doNoAnswer with v, JSON-encoded, as the body; what names v in an
// encoding error.
func (c *Client) doNoAnswerJSON(ctx context.Context, method, path string, v any, what string) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", what, err)
	}
	return c.doNoAnswer(ctx, request{method: method, path: path, body: body})
}

// maxDiscard bounds what discardBody reads of an answer nobody wants.
const maxDiscard = 256 << 10

// discardBody reads what is left of an answer's body (up to maxDiscard) and closes it.
// A body closed before its end closes its connection too, and the next call pays a new
// one and its TLS handshake: at thousands of agents reporting statuses, that was most
// of the server's CPU.
func discardBody(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxDiscard)) //nolint:errcheck // best effort: the body is closed next
	resp.Body.Close()
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
