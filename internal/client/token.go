package client

import "net/http"

// WithBearerToken sends "Authorization: Bearer <token>" with every request: a join token
// when an agent or server joins. It wraps the HTTP client set so far, so give it after
// WithHTTPClient.
func WithBearerToken(token string) Option {
	return func(c *Client) {
		base := c.http
		if base == nil {
			base = http.DefaultClient
		}
		rt := base.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		hc := *base
		hc.Transport = &bearerTransport{token: token, next: rt}
		c.http = &hc
	}
}

// bearerTransport adds the token to each request (on a clone: RoundTrippers must not
// change the caller's request).
type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (t *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.next.RoundTrip(r)
}
