package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
)

// A client given several servers (New("http://a:7470,http://b:7470")) sends each request
// to the server that answered last. When that one cannot be reached, or answers that it
// cannot serve right now (502, 503, 504: for a berth server, its etcd has no quorum), the
// request goes to the next server in order, and the first that answers becomes current.
// The agent fails over the same way (internal/agent/servers.go).
//
// A request that failed after it was sent (a connection reset, a 503 on an etcd timeout)
// may still have been applied; sent again to another server, a create then answers 409.
// Every berth write is safe to repeat in that sense: it either applies once or conflicts.

// roundTrip sends the request build makes for a server, failing over as above. It
// returns the first answer that is not a failover status; the caller owns its body.
func (c *Client) roundTrip(ctx context.Context, method, path string, build func(base *url.URL) (*http.Request, error)) (*http.Response, error) {
	start := int(c.cur.Load())
	var lastErr error
	for i := range c.bases {
		idx := (start + i) % len(c.bases)
		base := c.bases[idx]
		req, err := build(base)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, err)
		}
		req.Header.Set("User-Agent", c.userAgent)
		resp, err := c.http.Do(req)
		switch {
		case err != nil:
			lastErr = transportError(base, method, path, err)
			if ctx.Err() != nil {
				return nil, lastErr
			}
			continue
		case failoverStatus(resp.StatusCode) && i < len(c.bases)-1:
			lastErr = decodeError(resp)
			discardBody(resp)
			continue
		}
		if idx != start && !failoverStatus(resp.StatusCode) {
			c.cur.CompareAndSwap(int32(start), int32(idx))
		}
		return resp, nil
	}
	if len(c.bases) > 1 {
		var ue *UnreachableError
		if errors.As(lastErr, &ue) {
			ue.Server = fmt.Sprintf("%s (and every other server given: %v)", ue.Server, c.Servers())
		}
	}
	return nil, lastErr
}

// failoverStatus reports whether a server's answer means "ask another server".
func failoverStatus(code int) bool {
	switch code {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}
