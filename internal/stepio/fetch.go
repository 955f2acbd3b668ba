package stepio

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// maxRedirects bounds the redirects an http input follows.
const maxRedirects = 5

// httpClient is a client that dials through the policy, follows at most maxRedirects
// redirects and only to http or https, and never uses a proxy from the agent's
// environment (the proxy, not the URL's host, would be what the policy checks).
func (p *Policy) httpClient() *http.Client {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           p.Dialer().DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   30 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
		MaxIdleConns:          1,
		DisableKeepAlives:     true,
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("more than %d redirects", maxRedirects)
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("redirect to %s: only http and https", req.URL.Scheme)
			}
			return nil
		},
	}
}

// FetchHTTP GETs h.URL and writes the body to w, at most limit bytes; a longer body,
// a status other than 200, a refused address or a timeout is an error.
func (p *Policy) FetchHTTP(ctx context.Context, h *v4.WfHTTPArtifact, w io.Writer, limit int64) error {
	u, err := url.Parse(h.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url %q: only absolute http and https URLs", h.URL)
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	for _, hd := range h.Headers {
		req.Header.Add(hd.Name, hd.Value)
	}
	c := p.httpClient()
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", redactURL(u), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", redactURL(u), resp.Status)
	}
	if resp.ContentLength > limit {
		return fmt.Errorf("GET %s: %d bytes, more than %d bytes", redactURL(u), resp.ContentLength, limit)
	}
	n, err := io.Copy(w, io.LimitReader(resp.Body, limit+1))
	switch {
	case err != nil:
		return fmt.Errorf("GET %s: %w", redactURL(u), err)
	case n > limit:
		return fmt.Errorf("GET %s: more than %d bytes", redactURL(u), limit)
	}
	return nil
}

// redactURL drops a URL's query, which may carry a signature, from error messages.
func redactURL(u *url.URL) string {
	c := *u
	c.RawQuery, c.User = "", nil
	return c.String()
}
